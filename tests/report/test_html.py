"""report.html, the sweep page and the diff page, read as HTML (the browser test runs them)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from evalrun.errors import UsageError
from evalrun.models.diff import RunDiff
from evalrun.report.diff_html import render_diff_html
from evalrun.report.html import write_html
from evalrun.report.rundata import load_run
from evalrun.report.sweep_html import render_sweep_html
from tests.report.conftest import run_suite


class Outline(HTMLParser):
    """Counts what a reader would look for: tags, their ids, and every load a page could make."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def count(self, tag: str, **want: str) -> int:
        return sum(
            t == tag and all(want[k] in (a.get(k) or "").split() for k in want)
            for t, a in self.tags
        )


def outline(text: str) -> Outline:
    parser = Outline()
    parser.feed(text)
    return parser


def test_the_run_writes_a_report_with_table_plots_and_every_sample(run_dir):
    page = outline((run_dir / "report.html").read_text())
    assert page.count("table", **{"class": "tasks"}) == 1
    assert page.count("tr") >= 1 + 4  # header + one row per task
    assert page.count("svg", **{"class": "plot"}) == 4  # pass@k + three latency phases
    assert page.count("details", **{"class": "sample"}) == 12
    assert page.count("script") == 1


def test_the_report_loads_nothing_and_escapes_agent_and_verify_output(run_dir):
    text = (run_dir / "report.html").read_text()
    page = outline(text)
    loads = [a.get("src") or a.get("href") for t, a in page.tags if t in {"img", "link", "script"}]
    assert loads == [None]  # only the inline script
    links = [a["href"] for t, a in page.tags if t == "a"]
    assert all(h.startswith(("#", "samples/")) for h in links), links
    assert "<img src=x" not in text and "<script>alert" not in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text  # shown, as text
    assert "wrote &lt;b&gt;42&lt;/b&gt;" in text
    assert "default-src 'none'; script-src 'sha256-" in text  # the CSP: no load, one script


def test_the_report_shows_headline_numbers_and_breakdowns(run_dir):
    text = (run_dir / "report.html").read_text()
    assert re.search(
        r'<div class="v">0\.556</div><div class="pm">± 0\.46 · \[0\.04, 0\.97\]</div>'
        r'<div class="l">pass@1</div>',
        text,
    )
    assert 'title="95% CI [0.042, 0.972] (clustered-wilson, 3 tasks)"' in text
    assert text.count('<polygon class="band"') == 2  # pass@k and pass^k against k
    assert re.search(r'<div class="v">5 / 4 / 3</div>', text)
    assert "<h2>By tag</h2>" in text and "<h2>By difficulty</h2>" in text
    assert "Harness errors (3)" in text and "setup.sh failed (exit 3): boom" in text
    assert "trials: 3" in text  # the resolved config.yaml
    assert 'href="samples/002-flaky/1/verify.log"' in text


def test_the_report_shows_prompts_reasons_and_what_the_agent_changed(run_dir):
    text = (run_dir / "report.html").read_text()
    page = outline(text)
    assert page.count("details", **{"class": "prompt"}) == 4  # every task's prompt
    assert "<pre>Write the number 42 into answer.txt.</pre>" in text
    # the reason column: each failing task's first reason, as text
    assert '<td class="reason" data-v="FAIL: wrong answer red  end"' in text
    assert '<td class="reason" data-v="setup.sh failed (exit 3): boom"' in text
    # answer.txt was added by 001's 3 trials, 002's 2 passing ones and 003's 3 (with 41)
    assert text.count('<span class="ch added">added</span><code>answer.txt</code>') == 8
    assert '<span class="add">+41</span>' in text
    # the reason is shown once in a sample's body, readable
    body = text.split('id="s-2-0"', 1)[1].split("</details>", 1)[0]
    assert body.count("FAIL: wrong answer red  end") == 3  # summary line, why, verify output
    assert (
        '<div class="why"><h4>Why it did not pass</h4><pre>FAIL: wrong answer red  end</pre>'
        in body
    )
    assert (
        page.count("input", id="failures-only") == 1 and page.count("input", id="filter-text") == 1
    )
    assert "incomplete" not in text  # a complete run has no badge


def test_a_partial_run_carries_an_incomplete_badge(run_dir):
    path = run_dir / "samples.jsonl"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:9]))
    text = write_html(load_run(run_dir)).read_text()
    assert re.search(
        r'<span class="badge" id="incomplete" title="partial 9/12 [^"]*">'
        r"incomplete 9/12</span>",
        text,
    )


def test_a_report_refuses_a_folder_that_is_not_a_run(tmp_path):
    with pytest.raises(UsageError, match="not a run directory"):
        write_html(load_run(tmp_path))


def test_a_sweep_page_compares_jobs_and_names_what_differs(suite, tmp_path):
    sweep = tmp_path / "multirun" / "20250101-000000-eval"
    run_suite(suite, sweep / "0", "trials=2", "agent=oracle")
    run_suite(suite, sweep / "1", "trials=2", "agent=noop")
    text = render_sweep_html(sweep).read_text()
    assert "they differ in: <b>agent._target_</b>" in text
    assert 'href="0/report.html"' in text and 'href="1/report.html"' in text
    page = outline(text)
    assert page.count("table", **{"class": "matrix"}) == 1
    assert page.count("svg", **{"class": "plot"}) == 2


def test_a_sweep_page_needs_job_folders(tmp_path):
    with pytest.raises(UsageError, match="not a multirun folder"):
        render_sweep_html(tmp_path)


PAIRED = {"metric": "pass@1", "tasks": 1, "note": "noise"}
DIFF = RunDiff.model_validate(
    {
        "a": {"label": "runs/base", "run_id": "base", "state": "complete"},
        "b": {"label": "runs/<new>", "run_id": "new", "state": "complete"},
        "verdict": "pass@1 0.50 → 0.25 (-0.25, p=0.008, significant)",
        "k": 1,
        "config": {
            "changed": {
                "agent.provider.model": {"a": "m-1", "b": "m-2"},
                "trials": {"a": 3, "b": 5},
            },
            "added": {"agent.temperature": 0.2, "agent.note": "<b>extra</b>"},
            "removed": {},
        },
        "config_not_result_relevant": [],
        "tasks": {
            "added": ["009-new"],
            "removed": [],
            "changed": [],
            "rows": [
                {
                    "task_id": "001-x",
                    "fingerprint_changed": False,
                    "a": {"pass@1": 0.5, "passes": 1, "n": 2},
                    "b": {"pass@1": 1.0, "passes": 2, "n": 2},
                    "delta": {"pass@1": 0.5, "passes": 1, "n": 0},
                    "significance": {
                        "test": "fisher-exact",
                        "p": 0.52,
                        "significant": False,
                        "note": "noise (Fisher p=0.52)",
                    },
                    "index": {"a": 0, "b": 0},
                }
            ],
        },
        "metrics": {
            "pass@1": {
                "a": 0.5,
                "b": 0.25,
                "delta": -0.25,
                "higher_is_better": True,
                "paired": {
                    **PAIRED,
                    "mean_delta": -0.25,
                    "ci95": [-0.4, -0.1],
                    "p": 0.008,
                    "significant": True,
                },
            },
            "cost_total": {"a": 2.0, "b": 1.0, "delta": -1.0, "higher_is_better": False},
            "error_rate": {"a": 0.1, "b": 0.1, "delta": 0.0, "higher_is_better": False},
        },
        "significance": {**PAIRED, "note": "significant: -0.250, p=0.008"},
    }
)


def test_a_diff_page_colours_improvements_and_regressions():
    text = render_diff_html(DIFF)
    assert "runs/base → runs/&lt;new&gt;" in text
    assert '<span class="down">-0.25</span>' in text  # pass@1 fell
    assert '<span class="up">-$1.00</span>' in text  # cost fell: better
    # the change over shared tasks: its p-value and verdict (bold: significant), its interval
    assert '<b>p=0.008, significant</b> <span class="muted">[-0.40, -0.10]</span>' in text
    assert '<span class="">0</span>' in text  # error rate: unchanged
    assert '0.50 → 1.00 <span class="up">+0.50</span>' in text  # per-task pass@1 rose
    assert "agent.provider.model" in text and "m-2" in text and ">5<" in text
    assert "<b>added (1)</b>: 009-new" in text
    assert "&lt;b&gt;extra&lt;/b&gt;" in text  # config values are shown, escaped
    assert "p=0.52, noise" in text  # the task's own significance, beside its delta
    assert "<b>significance</b>: significant: -0.250, p=0.008" in text


def test_an_empty_diff_still_renders():
    side = {"label": "a", "run_id": "a", "state": None}
    empty = {"changed": {}, "added": {}, "removed": {}}
    no_tasks = {"added": [], "removed": [], "changed": [], "rows": []}
    text = render_diff_html(
        RunDiff.model_validate(
            {
                "a": side, "b": {**side, "label": "b"}, "verdict": "pass@1: not in both runs",
                "k": 1, "config": empty, "config_not_result_relevant": [], "tasks": no_tasks,
                "metrics": {}, "significance": {**PAIRED, "tasks": 0},
            }
        )
    )  # fmt: skip
    assert "The resolved configs are identical." in text and "No metrics compared." in text
