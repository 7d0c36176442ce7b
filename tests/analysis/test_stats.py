"""The statistics module against published tables, hand-worked examples and seeded simulations."""

from __future__ import annotations

import math
import random

import pytest

from evalrun.analysis import stats
from evalrun.analysis.metrics import pass_at_k
from evalrun.analysis.stats import (
    Variance,
    fisher_exact,
    half_width,
    paired_difference,
    pass_rate,
    sign_flip_p,
    t_quantile,
    t_two_sided_p,
    task_mean,
    tasks_for_half_width,
    tasks_to_detect,
    wilson,
)


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [  # Newcombe (1998), Statistics in Medicine 17:857, Table II, method 3 (Wilson score)
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0000, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_interval_matches_the_published_examples(successes, n, low, high):
    lo, hi = wilson(successes, n)
    assert (lo, hi) == (pytest.approx(low, abs=5e-5), pytest.approx(high, abs=5e-5))


@pytest.mark.parametrize(
    ("q", "df", "expected"),
    [  # Student's t table
        (0.975, 1, 12.706),
        (0.975, 4, 2.776),
        (0.975, 10, 2.228),
        (0.975, 30, 2.042),
        (0.8, 1, 1.376),
        (0.8, 20, 0.860),
        (0.025, 10, -2.228),
    ],
)
def test_t_quantiles_match_the_table(q, df, expected):
    assert t_quantile(q, df) == pytest.approx(expected, abs=5e-4)


def test_t_tail_probability():
    assert t_two_sided_p(2.0, 10) == pytest.approx(0.07339, abs=1e-5)
    assert t_two_sided_p(0.0, 5) == pytest.approx(1.0)
    assert t_two_sided_p(1.96, 10_000) == pytest.approx(0.05, abs=1e-3)  # -> the normal


def test_fisher_exact_matches_published_values():
    assert fisher_exact(3, 1, 1, 3) == pytest.approx(0.4857, abs=1e-4)  # Fisher's tea tasting
    assert fisher_exact(1, 9, 11, 3) == pytest.approx(0.002759, abs=1e-6)
    assert fisher_exact(5, 0, 0, 5) == pytest.approx(2 / 252)
    assert fisher_exact(3, 2, 2, 3) == 1.0
    assert fisher_exact(0, 0, 4, 1) == 1.0  # an empty side says nothing


# Four tasks x three trials, worked by hand:
#   a: 1 1 0  (2/3)   b: 0 0 0  (0)   c: 1 1 1  (1)   d: 1 0 0  (1/3)
# Task means 2/3, 0, 1, 1/3; mean 1/2; squared deviations 1/36 + 1/4 + 1/4 + 1/36 = 5/9.
# Sample variance (5/9) / 3 = 5/27; clustered SE = sqrt(5/27 / 4) = sqrt(5/108) = 0.21517.
# Miller's clustered formula over the 12 samples (no small-sample factor): the deviations summed
# within each task are 0.5, -1.5, 1.5, -0.5; (0.25 + 2.25 + 2.25 + 0.25) / 12^2 = 5/144, whose
# square root 0.18634 times sqrt(T / (T - 1)) = sqrt(4/3) is again 0.21517.
# The naive SE that counts 12 independent samples: sqrt(0.25 / 12) = 0.14434.
HAND = [(2, 3), (0, 3), (3, 3), (1, 3)]


def test_clustered_standard_error_worked_by_hand():
    estimate = pass_rate(HAND)
    assert estimate.value == 0.5 and estimate.method == "clustered-wilson"
    assert estimate.se == pytest.approx(math.sqrt(5 / 108))
    assert estimate.se == pytest.approx(math.sqrt(5 / 144) * math.sqrt(4 / 3))
    assert estimate.se > math.sqrt(0.25 / 12)  # wider than the naive one
    # the interval: Wilson at the effective size p(1-p)/SE^2 = 0.25 / (5/108) = 5.4 trials,
    # with t(0.975, 3) = 3.182: centre 0.5, half-width computed here independently
    n_eff, t = 0.25 / (5 / 108), 3.182446305284263
    half = t / (1 + t * t / n_eff) * math.sqrt(0.25 / n_eff + t * t / (4 * n_eff**2))
    assert (estimate.low, estimate.high) == (
        pytest.approx(0.5 - half, abs=1e-9),
        pytest.approx(0.5 + half, abs=1e-9),
    )


def test_one_trial_per_task_is_a_wilson_interval_over_tasks():
    estimate = pass_rate([(1, 1)] * 81 + [(0, 1)] * 182)  # 81 of 263 tasks
    assert estimate.method == "wilson"
    assert (estimate.low, estimate.high) == (
        pytest.approx(0.2553, abs=5e-5),
        pytest.approx(0.3662, abs=5e-5),
    )
    assert estimate.plus_minus() == "0.31 ± 0.06"
    assert pass_rate([(0, 0)]) is None  # nothing scored: no estimate at all


def test_edges_stay_inside_zero_and_one_and_one_task_gives_no_interval():
    all_pass = pass_rate([(3, 3)] * 10)
    assert all_pass.value == 1.0 and all_pass.high == 1.0
    assert all_pass.low == pytest.approx(wilson(10, 10, t_quantile(0.975, 9))[0])
    lonely = pass_rate([(2, 3)])
    assert lonely.se is None and lonely.low is None and lonely.plus_minus() == "0.67"
    # at the bound, a symmetric ± would read "up to 1.40": the lopsided interval is shown
    assert all_pass.plus_minus() == f"1.00 [{all_pass.low:.2f}, 1.00]"


def simulate_suite(rng: random.Random, tasks: int, trials: int, mean: float, icc: float):
    """Per-task true rates from a Beta distribution with the given mean and ICC = 1/(a+b+1)."""
    spread = 1 / icc - 1
    rates = [rng.betavariate(mean * spread, (1 - mean) * spread) for _ in range(tasks)]
    return rates, [(sum(rng.random() < p for _ in range(trials)), trials) for p in rates]


def test_clustered_interval_covers_the_truth_on_correlated_trials_and_the_naive_one_does_not():
    """20 tasks x 5 trials whose true pass rates vary a lot between tasks (ICC 0.5): the
    population pass@1 is 0.6. Over 600 seeded suites the clustered interval holds 0.6 about 95%
    of the time; a Wilson interval that counts 100 independent samples holds it far less often.
    (At 600 replicates, one standard error of a 95% coverage estimate is 0.009.)"""
    rng = random.Random(20)
    replicates, truth = 600, 0.6
    clustered = naive = 0
    for _ in range(replicates):
        _, counts = simulate_suite(rng, tasks=20, trials=5, mean=truth, icc=0.5)
        est = pass_rate(counts)
        clustered += est.low <= truth <= est.high
        low, high = wilson(sum(c for c, _ in counts), 100)
        naive += low <= truth <= high
    assert 0.92 <= clustered / replicates <= 0.985
    assert naive / replicates <= 0.85


def test_pass_at_k_interval_covers_the_truth():
    """pass@5 on 5 trials of 20 tasks: the truth is E[1 - (1 - p)^5] over the task population."""
    rng = random.Random(5)
    population = [rng.betavariate(0.6, 0.4) for _ in range(100_000)]
    truth = sum(1 - (1 - p) ** 5 for p in population) / len(population)
    replicates, covered = 400, 0
    for _ in range(replicates):
        _, counts = simulate_suite(rng, tasks=20, trials=5, mean=0.6, icc=0.5)
        est = task_mean([pass_at_k(n, c, 5) for c, n in counts], trials=100)
        covered += est.low <= truth <= est.high
    assert 0.92 <= covered / replicates <= 0.99


def test_sign_flip_p_counts_every_sign_pattern():
    # [0.5, 0.25, -0.25]: of the 8 sign patterns, 6 sum to |x| >= 0.5 (worked by hand)
    assert sign_flip_p([0.5, 0.25, -0.25]) == (0.75, True)
    assert sign_flip_p([1, 1, 1]) == (0.25, True)  # three tasks that all moved: 2 of 8
    assert sign_flip_p([-1] * 6) == (2 / 64, True)
    assert sign_flip_p([0, 0]) == (1.0, True)
    brute_force = [1, -1 / 3, 2 / 3, 0.2, -0.4, 1, 1 / 3, 0.5, 0.5, -1]
    count = 0
    for pattern in range(2**10):
        signs = [1 if pattern >> i & 1 else -1 for i in range(10)]
        total = abs(sum(s * abs(d) for s, d in zip(signs, brute_force, strict=True)))
        count += total >= abs(sum(brute_force)) - 1e-9
    assert sign_flip_p(brute_force) == (pytest.approx(count / 2**10), True)
    # 60 tasks of 60 different sizes are not counted: a seeded Monte Carlo, reproducible
    varied = [random.Random(i).uniform(-0.5, 0.6) for i in range(60)]
    p, exact = sign_flip_p(varied)
    assert not exact and sign_flip_p(varied) == (p, False)


def test_paired_difference_interval_and_p():
    # per-task changes 0.2, 0.4, 0.0, 0.2, 0.2: mean 0.2, sd sqrt(0.02), se sqrt(0.02/5)
    before = [0.2, 0.4, 0.6, 0.4, 0.0]
    after = [0.4, 0.8, 0.6, 0.6, 0.2]
    change = paired_difference(before, after)
    se = math.sqrt(0.02 / 5)
    assert change.mean == pytest.approx(0.2) and change.se == pytest.approx(se)
    assert change.low == pytest.approx(0.2 - 2.776445 * se, abs=1e-6)
    assert change.p == 2 / 16 and change.changed == 4  # four moved, all up: 2 of 16 patterns
    assert not change.significant  # too few tasks for any p below 0.05


def test_pairing_sees_a_change_that_two_separate_intervals_hide():
    """30 tasks of very different difficulty; the new agent solves 8 more of them. Each run's
    own interval overlaps the other's, but task by task the change is clear."""
    a = [1.0] * 12 + [0.0] * 18
    b = [1.0] * 20 + [0.0] * 10
    run_a, run_b = task_mean(a, trials=30), task_mean(b, trials=30)
    assert run_a.high > run_b.low  # the separate intervals overlap
    change = paired_difference(a, b)
    assert change.significant and change.p == pytest.approx(2 / 2**8)


# Planning, against the normal-theory formulas computed independently here.
def test_interval_width_and_tasks_needed_for_a_target_width():
    variance = Variance.assumed(0.62, icc=0.5)
    # with 23 tasks x 1 trial the variance of the mean is p(1-p)/23, whatever the ICC
    assert half_width(variance, 23, 1) == pytest.approx(1.96 * math.sqrt(0.62 * 0.38 / 23), 1e-3)
    assert round(half_width(variance, 23, 1), 2) == 0.20
    assert tasks_for_half_width(variance, 0.10, 1) == math.ceil(1.959964**2 * 0.2356 / 0.01) == 91
    # with ICC 0.5, trials help only the within-task half of the variance
    assert half_width(variance, 23, 100) > half_width(variance, 23, 1) / math.sqrt(2) * 0.99


def test_tasks_to_detect_a_change():
    variance = Variance.assumed(0.5, icc=0.5)  # between 0.125, within 0.125
    # per-task variance of the change: 2 (1 - 0.5) 0.125 + 2 x 0.125 / 1 = 0.375
    normal = math.ceil((1.959964 + 0.841621) ** 2 * 0.375 / 0.1**2)
    needed = tasks_to_detect(variance, 0.1, 1)
    assert normal == 295 and normal <= needed <= normal + 3  # Student's t adds a task or two
    assert tasks_to_detect(variance, 0.1, 5) < needed  # more trials help...
    assert tasks_to_detect(variance, 0.1, 5, correlation=0.9) < tasks_to_detect(variance, 0.1, 5)


def test_planned_power_is_achieved_in_simulation():
    """Plan for an 80% chance of detecting +0.2 with 1 trial per task, then run 300 seeded
    experiments of that size with a paired t-test: about 80% of them detect it."""
    rng = random.Random(7)
    mean_a, delta = 0.35, 0.2
    within = (mean_a * (1 - mean_a) + (mean_a + delta) * (1 - mean_a - delta)) / 2
    between = 0.25**2 / 12  # per-task rates uniform over a width of 0.25
    variance = Variance(mean_a + delta / 2, between, within - between, measured=True)
    tasks = tasks_to_detect(variance, delta, 1, correlation=1.0)
    detected, replicates = 0, 300
    for _ in range(replicates):
        rates = [rng.uniform(mean_a - 0.125, mean_a + 0.125) for _ in range(tasks)]
        a = [float(rng.random() < p) for p in rates]
        b = [float(rng.random() < p + delta) for p in rates]
        d = [y - x for x, y in zip(a, b, strict=True)]
        se = stats.standard_error(d)
        detected += t_two_sided_p(stats.mean(d) / se, tasks - 1) < 0.05
    assert 0.72 <= detected / replicates <= 0.88


def test_variance_components_are_measured_from_several_trials():
    # five tasks always pass, five never: all of the variance is between tasks
    split = Variance.from_tasks([(3, 3)] * 5 + [(0, 3)] * 5)
    assert split.measured and split.icc == pytest.approx(1.0) and split.rate == 0.5
    # every task flips a fair coin three times: rates vary only by trial noise, ICC near 0
    rng = random.Random(3)
    coins = Variance.from_tasks(
        [(sum(rng.random() < 0.5 for _ in range(3)), 3) for _ in range(400)]
    )
    assert coins.icc < 0.1 and coins.within == pytest.approx(0.25, abs=0.02)
    one_trial = Variance.from_tasks([(1, 1), (0, 1), (1, 1)], icc=0.3)
    assert not one_trial.measured and one_trial.icc == pytest.approx(0.3)
