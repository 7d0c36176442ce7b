"""Error bars for every figure evalrun reports, and how many tasks x trials a comparison needs.

One small module, standard library only (it is on the start-up path of every command).

What is estimated. A suite value (pass@1, pass@k, pass^k) is a macro mean over tasks, and the
question a user asks of it is about the *population of tasks* the suite stands for: would the
agent do as well on tasks like these? So the task is the unit of sampling. The k trials of one
task are correlated (an agent that cannot do a task fails it every time), which makes them one
cluster: counting them as independent samples gives an interval that is far too narrow
(Miller 2024, "Adding Error Bars to Evals", section on clustered standard errors). Every
standard error here is therefore computed from the per-task values - the sample standard
deviation of the task values over the square root of the number of tasks - which is the
cluster-robust standard error with one cluster per task (CR1: Miller's clustered formula with
the usual small-sample factor T/(T-1)).

Methods (an `Estimate` names the one that produced it in `method`):

- `wilson` - pass@1 when every task has one scored trial: the proportion of tasks that passed,
  with the Wilson score interval, which stays inside [0, 1] and keeps close to 95% coverage
  down to a handful of tasks (the normal "p +- 1.96 SE" does neither).
- `clustered-wilson` - pass@1 with several trials per task, and pass@k / pass^k: the macro mean
  of the per-task values, its task-clustered standard error, and the Wilson interval at the
  effective sample size p(1-p)/SE^2 (the number of independent trials that would give the same
  standard error): the design-effect-adjusted Wilson interval used for clustered survey
  proportions. Its quantile is Student's t on T-1 degrees of freedom, because the standard error
  is itself estimated from only T tasks. A percentile bootstrap over tasks was measured too and
  left out: on simulated suites with correlated trials it covered the truth for pass@k as little
  as 55% of the time (pass@k values pile up at 1, and a bootstrap cannot reach beyond what it
  resamples) where this interval covered 94-100% (bench/interval_coverage.py,
  docs/statistics.md).

Comparisons (`paired_difference`): two runs over the same tasks are compared task by task
(Miller's paired differences): the per-task change d_i = b_i - a_i, its mean, the clustered
standard error of that mean and a Student t interval. The p-value is a sign-flip (randomization)
test: under "no difference", each task's change is as likely to have either sign. It counts the
2^m sign patterns of the m tasks that changed exactly (a seeded Monte Carlo only when the
changes take so many distinct sizes that counting would be slow). It needs no normality, and it
cannot call three tasks that all moved "significant" (the smallest p with m changed tasks is
2/2^m: six are needed for p < 0.05).
One task on its own is compared with Fisher's exact test (`fisher_exact`).

Planning (`Variance`, `half_width`, `tasks_for_half_width`, `tasks_to_detect`): the variance of
a macro pass rate over T tasks with K trials each is (between + within / K) / T, where `between`
is the variance of the true per-task pass rates and `within` the mean Bernoulli variance
p_i(1 - p_i) of one trial (Miller's resampling section). Their share `icc` = between / (between
+ within) is what decides whether more trials or more tasks buy precision.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

from evalrun.models.summary import Estimate

ALPHA = 0.05  # a difference is called significant at p < ALPHA
LEVEL = 1 - ALPHA  # every interval in evalrun is a 95% interval
SIGN_FLIP_RESAMPLES = 10_000
EXACT_SIGN_FLIP_SUMS = 50_000  # beyond this many distinct sums, Monte Carlo
SEED = 0

WILSON = "wilson"
CLUSTERED_WILSON = "clustered-wilson"
PAIRED_T = "paired-t"
SIGN_FLIP = "sign-flip"
FISHER_EXACT = "fisher-exact"

_NORMAL = NormalDist()
Z = _NORMAL.inv_cdf(0.5 + LEVEL / 2)  # 1.95996...


# --- basic pieces --------------------------------------------------------------------------------
def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def standard_error(values: Sequence[float]) -> float | None:
    """Standard error of the mean of `values`, each one independent unit (here: one task):
    sample standard deviation / sqrt(n). None with fewer than two values."""
    n = len(values)
    if n < 2:
        return None
    m = mean(values)
    return math.sqrt(math.fsum((v - m) ** 2 for v in values) / (n - 1) / n)


def wilson(successes: float, n: float, z: float = Z) -> tuple[float, float]:
    """Wilson score interval of the proportion successes / n (n may be an effective size)."""
    if n <= 0:
        raise ValueError("wilson: n must be positive")
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    low = 0.0 if p <= 0 else max(0.0, centre - half)  # exact at the edges, not 1 - 1e-16
    return low, 1.0 if p >= 1 else min(1.0, centre + half)


# --- Student's t, from the regularised incomplete beta function ----------------------------------
def _beta_fraction(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz evaluation)."""
    tiny, eps = 1e-300, 1e-15
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 500):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1.0) < eps:
            break
    return result


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with `df` degrees of freedom."""
    if math.isinf(t):
        return 0.0
    return incomplete_beta(df / 2, 0.5, df / (df + t * t))


def t_density(t: float, df: float) -> float:
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_norm - (df + 1) / 2 * math.log1p(t * t / df))


@lru_cache(maxsize=512)
def t_quantile(q: float, df: float) -> float:
    """The q-quantile of Student's t (0 < q < 1): Newton's method from the Cornish-Fisher
    expansion, kept inside a shrinking bracket (cached: a summary asks for the same few degrees
    of freedom many times)."""
    if not 0.0 < q < 1.0:
        raise ValueError("t_quantile: q must be in (0, 1)")
    if q == 0.5:
        return 0.0
    tail = 1.0 - q if q > 0.5 else q  # P(T > t) for the t >= 0 we look for
    z = _NORMAL.inv_cdf(1.0 - tail)
    t = (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )
    lo, hi = 0.0, math.inf
    for _ in range(100):
        gap = t_two_sided_p(t, df) / 2 - tail  # > 0: t is too small
        if abs(gap) <= 1e-15 * tail or hi - lo <= 1e-13 * t:
            break
        lo, hi = (t, hi) if gap > 0 else (lo, t)
        step = t + gap / t_density(t, df)
        t = step if lo < step < hi else (lo + hi) / 2 if math.isfinite(hi) else 2 * t
    return t if q > 0.5 else -t


# --- estimates for the summary -------------------------------------------------------------------
def pass_rate(per_task: Sequence[tuple[int, int]]) -> Estimate | None:
    """pass@1 over tasks from (passes, scored trials) per task; unscored tasks are left out.

    One trial per task: `wilson` over tasks. Several: `clustered-wilson` over the per-task
    rates (see `task_mean`). None when no task was scored."""
    scored = [(c, n) for c, n in per_task if n > 0]
    tasks = len(scored)
    if not tasks:
        return None
    if all(n == 1 for _, n in scored):
        passes = sum(c for c, _ in scored)
        p = passes / tasks
        low, high = wilson(passes, tasks)
        return Estimate(p, math.sqrt(p * (1 - p) / tasks), low, high, WILSON, tasks)
    return task_mean([c / n for c, n in scored], trials=sum(n for _, n in scored))


def task_mean(values: Sequence[float], *, trials: int) -> Estimate | None:
    """Macro mean of per-task values in [0, 1] (a pass rate, pass@k, pass^k) with its
    task-clustered standard error and `clustered-wilson` interval; `trials` is how many scored
    trials the values come from (the effective sample size never exceeds it).

    When the standard error is 0 (every task has the same value) the tasks are counted as the
    effective sample size, the conservative end: the trials of a task may be fully correlated."""
    tasks = len(values)
    if not tasks:
        return None
    p = mean(values)
    se = standard_error(values)
    if se is None:
        return Estimate(p, None, None, None, CLUSTERED_WILSON, tasks)
    spread = p * (1 - p)
    effective = float(tasks) if se == 0 or spread == 0 else min(spread / se**2, float(trials))
    low, high = wilson(p * effective, effective, t_quantile(0.5 + LEVEL / 2, tasks - 1))
    return Estimate(p, se, low, high, CLUSTERED_WILSON, tasks)


# --- comparisons ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Difference:
    """The mean per-task change b - a over the tasks both runs share, with a `paired-t` 95%
    interval and a `sign-flip` p-value (exact, or Monte Carlo: `exact`)."""

    mean: float
    se: float | None
    low: float | None
    high: float | None
    p: float | None
    tasks: int
    changed: int  # tasks whose value differs between the runs
    exact: bool = True

    @property
    def significant(self) -> bool:
        return self.p is not None and self.p < ALPHA and self.mean != 0


def sign_flip_p(deltas: Sequence[float], *, seed: int = SEED) -> tuple[float, bool]:
    """Two-sided p-value of "the mean change is 0": the share of the 2^m ways of giving the m
    nonzero changes a sign whose sum is at least as far from 0 as the observed one. Returns the
    p-value and whether it is exact.

    Exact by counting: changes of equal size are grouped (pass rates over a few trials take few
    values), and the distribution of the signed sum is built group by group with binomial
    counts. When the sizes are so varied that the distribution would exceed
    `EXACT_SIGN_FLIP_SUMS` distinct sums, a seeded Monte Carlo estimate is returned instead."""
    moved = [abs(d) for d in deltas if d != 0]
    if not moved:
        return 1.0, True
    observed = abs(math.fsum(deltas)) - 1e-9
    sums: dict[float, int] = {0.0: 1}  # signed sum -> number of sign patterns giving it
    for size, count in Counter(round(d, 12) for d in moved).items():
        grown: dict[float, int] = defaultdict(int)
        for total, ways in sums.items():
            for up in range(count + 1):  # `up` of the `count` equal changes keep a + sign
                grown[round(total + size * (2 * up - count), 9)] += ways * math.comb(count, up)
        sums = grown
        if len(sums) > EXACT_SIGN_FLIP_SUMS:
            return _sign_flip_monte_carlo(moved, observed, seed), False
    extreme = sum(ways for total, ways in sums.items() if abs(total) >= observed)
    return extreme / 2 ** len(moved), True


def _sign_flip_monte_carlo(moved: list[float], observed: float, seed: int) -> float:
    rng = random.Random(seed)
    hits = sum(
        abs(math.fsum(d if rng.random() < 0.5 else -d for d in moved)) >= observed
        for _ in range(SIGN_FLIP_RESAMPLES)
    )
    return (hits + 1) / (SIGN_FLIP_RESAMPLES + 1)


def paired_difference(a: Sequence[float], b: Sequence[float]) -> Difference | None:
    """Compare two runs task by task: `a[i]` and `b[i]` are the same task's value in each."""
    deltas = [y - x for x, y in zip(a, b, strict=True)]
    tasks = len(deltas)
    if not tasks:
        return None
    m = mean(deltas)
    changed = sum(d != 0 for d in deltas)
    p, exact = sign_flip_p(deltas)
    se = standard_error(deltas)
    if se is None:
        return Difference(m, None, None, None, p, tasks, changed, exact)
    half = t_quantile(0.5 + LEVEL / 2, tasks - 1) * se
    return Difference(m, se, m - half, m + half, p, tasks, changed, exact)


def fisher_exact(pass_a: int, fail_a: int, pass_b: int, fail_b: int) -> float:
    """Two-sided Fisher exact p-value of the 2x2 table [[pass_a, fail_a], [pass_b, fail_b]].

    Exact for the handful of trials one task gets (a normal approximation is not). Sums the
    probabilities of every table with the same margins that is no more likely than the observed
    one, in integers (`math.comb`)."""
    row_a, row_b = pass_a + fail_a, pass_b + fail_b
    passes = pass_a + pass_b
    if row_a == 0 or row_b == 0 or passes in (0, row_a + row_b):
        return 1.0  # no information: an empty side, or every sample agrees

    def weight(x: int) -> int:  # tables with x passes in run a, margins fixed
        return math.comb(row_a, x) * math.comb(row_b, passes - x)

    observed = weight(pass_a)
    lo, hi = max(0, passes - row_b), min(row_a, passes)
    tail = sum(w for w in (weight(x) for x in range(lo, hi + 1)) if w <= observed)
    return min(1.0, tail / math.comb(row_a + row_b, passes))


# --- planning ------------------------------------------------------------------------------------
DEFAULT_ICC = 0.5  # assumed share of between-task variance when a run cannot measure it
DEFAULT_CORRELATION = 0.5  # assumed correlation of two agents' per-task pass rates
DEFAULT_POWER = 0.8


@dataclass(frozen=True)
class Variance:
    """Variance components of per-task pass rates: `between` tasks (of the true rates) and
    `within` a task (the mean Bernoulli variance of one trial). `measured` is False when they
    come from an assumed rate and ICC rather than from a run with several trials per task."""

    rate: float
    between: float
    within: float
    measured: bool

    @property
    def icc(self) -> float:
        total = self.between + self.within
        return self.between / total if total > 0 else 0.0

    @classmethod
    def assumed(cls, rate: float, icc: float = DEFAULT_ICC) -> Variance:
        if not 0.0 <= rate <= 1.0 or not 0.0 <= icc <= 1.0:
            raise ValueError("rate and icc must lie in [0, 1]")
        total = rate * (1 - rate)
        return cls(rate, icc * total, (1 - icc) * total, measured=False)

    @classmethod
    def from_tasks(
        cls, per_task: Sequence[tuple[int, int]], icc: float = DEFAULT_ICC
    ) -> Variance | None:
        """Measure them from (passes, scored trials) per task. With at least two tasks of two or
        more trials: within = mean of the unbiased c(n-c)/(n(n-1)); between = the variance of the
        observed rates less the part trial noise explains (never below 0). Otherwise only the
        rate is measured and `icc` is assumed. None when nothing was scored."""
        scored = [(c, n) for c, n in per_task if n > 0]
        if not scored:
            return None
        rate = mean([c / n for c, n in scored])
        multi = [(c, n) for c, n in scored if n > 1]
        if len(multi) < 2:
            return cls.assumed(rate, icc)
        unbiased = [c * (n - c) / (n * (n - 1)) for c, n in multi]
        rates = [c / n for c, n in multi]
        spread = standard_error(rates)
        assert spread is not None
        observed_var = spread**2 * len(rates)
        noise = mean([w / n for w, (_, n) in zip(unbiased, multi, strict=True)])
        return cls(rate, max(0.0, observed_var - noise), mean(unbiased), measured=True)

    def per_task(self, trials: int) -> float:
        """Variance of one task's observed pass rate over `trials` trials."""
        return self.between + self.within / trials


def half_width(variance: Variance, tasks: int, trials: int) -> float:
    """About how far the 95% interval of pass@1 reaches either side with this plan."""
    return Z * math.sqrt(variance.per_task(trials) / tasks)


def tasks_for_half_width(variance: Variance, target: float, trials: int) -> int:
    """Tasks needed (with `trials` each) for a 95% interval of about +- `target`."""
    return max(2, math.ceil(Z**2 * variance.per_task(trials) / target**2))


def tasks_to_detect(
    variance: Variance,
    delta: float,
    trials: int,
    *,
    power: float = DEFAULT_POWER,
    correlation: float = DEFAULT_CORRELATION,
) -> int:
    """Tasks needed (with `trials` each, both agents on the same tasks) to detect a change of
    `delta` in pass@1 with probability `power` at two-sided level ALPHA.

    Per task the change's variance is 2(1 - correlation) * between + 2 * within / trials (both
    agents assumed to have the measured variance; `correlation` of their true per-task rates).
    Normal approximation, then refined with Student's t on T - 1 degrees of freedom."""
    spread = 2 * (1 - correlation) * variance.between + 2 * variance.within / trials
    if spread <= 0:
        return 2
    z_sum = _NORMAL.inv_cdf(1 - ALPHA / 2) + _NORMAL.inv_cdf(power)
    tasks = max(2, math.ceil(z_sum**2 * spread / delta**2))
    for _ in range(20):
        df = tasks - 1
        t_sum = t_quantile(1 - ALPHA / 2, df) + t_quantile(power, df)
        needed = max(2, math.ceil(t_sum**2 * spread / delta**2))
        if needed == tasks:
            break
        tasks = needed
    return tasks
