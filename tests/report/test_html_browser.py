"""The reports in a real headless Chromium (Debian package `chromium`).

Chromium loads each page from disk with `?selftest=1`; the page's own script then clicks a numeric
column header twice, opens one sample's drill-down, types into the text filter, clicks the
"failures only" toggle and checks - in the real layout - that a failing sample's prompt, reason
and workspace diff are visible, and writes what it saw into `<pre id=selftest>` (see
evalrun/report/templates/report.js). We read the DOM Chromium dumps after that, and its stderr:
the page never logs to the console, so any console line (an uncaught error, a load the CSP
blocked) fails. Screenshots - the run report after the toggle, the diff page at 1280 px - are
written to artifacts/ (git-ignored; nothing collects them) for people to look at after a run.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from evalrun.report.diff_html import render_diff_html
from evalrun.report.sweep_html import render_sweep_html
from tests.cli.test_main import evalrun
from tests.conftest import REPO, require_engine
from tests.report.conftest import run_suite
from tests.report.test_html import DIFF

pytestmark = pytest.mark.browser

ARTIFACTS = REPO / "artifacts"


FLAGS = (  # headless, and none of Chromium's own connections (refused on a closed network)
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    require_engine(path is not None, "chromium (apt-get install -y chromium)")
    assert path is not None
    return path


@dataclass
class Loaded:
    dom: str
    console: list[str]  # console lines Chromium logged for the page

    @property
    def selftest(self) -> str:
        found = re.search(r'<pre id="selftest">(.*?)</pre>', self.dom, re.S)
        return found.group(1) if found else ""


def load(page: Path, tmp_path: Path, *extra: str, query: str = "?selftest=1") -> Loaded:
    """Open `page` in headless Chromium; `extra` flags replace the default --dump-dom."""
    args = [
        chromium(),
        *FLAGS,
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=3000",
        *(extra or ("--dump-dom",)),
        page.resolve().as_uri() + query,
    ]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [
        line for line in proc.stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line
    ]
    return Loaded(proc.stdout, console)


def test_run_report_sorts_filters_opens_a_sample_and_logs_nothing(run_dir, tmp_path):
    loaded = load(run_dir / "report.html", tmp_path, "--dump-dom", "--window-size=1280,2000")
    assert loaded.console == []
    assert loaded.selftest.startswith("SELFTEST PASS"), loaded.selftest
    assert "FAIL" not in loaded.selftest.replace("SELFTEST PASS", "")
    assert "drill-down s-0-0 opens" in loaded.selftest
    assert "text filter '001-pass' keeps 1 of 4 rows" in loaded.selftest
    assert "failures only keeps 3 failing rows of 4" in loaded.selftest
    for shown in ("is open", "prompt is visible", "reason is visible", "diff is visible"):
        assert shown in loaded.selftest, loaded.selftest
    assert "plots 4, samples 12" in loaded.selftest
    rows = re.search(r'<table class="sortable tasks">.*?<tbody>(.*?)</tbody>', loaded.dom, re.S)
    assert rows and rows.group(1).count("<tr ") == 4
    assert loaded.dom.count('<svg class="plot"') == 4
    assert re.search(
        r'<details class="sample" id="s-\d-\d" data-outcome="fail"[^>]*open=""', loaded.dom
    )
    # the hostile agent output stayed text: no element was created from it
    assert "<img src=x" not in loaded.dom and "&lt;img src=x onerror=alert(1)&gt;" in loaded.dom


def test_a_failing_sample_after_the_toggle_is_kept_as_a_screenshot(run_dir, tmp_path):
    """The screenshot CI keeps: the failures-only view, a failing sample open with its prompt,
    its reason and the diff of what the agent changed (the selftest clicked the toggle)."""
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report-failures-only.png"
    shot.unlink(missing_ok=True)
    load(run_dir / "report.html", tmp_path, f"--screenshot={shot}", "--window-size=1280,2400")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a page, not a blank


def test_the_diff_page_fits_1280_px_and_links_both_runs(suite, run_dir, tmp_path):
    other = run_suite(suite, tmp_path / "runs" / "noop", "trials=3", "agent=noop")
    page = tmp_path / "diff.html"
    proc = evalrun("diff", str(run_dir), str(other), "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    loaded = load(page, tmp_path, "--dump-dom", "--window-size=1280,1200")
    assert loaded.selftest.startswith("SELFTEST PASS"), loaded.selftest
    width = int(re.search(r"scrollWidth (\d+)", loaded.selftest).group(1))
    assert width <= 1280, loaded.selftest  # no horizontal overflow at 1280 px
    assert 'id="verdict">pass@1 0.56 → 0.00 (-0.56, p=' in loaded.dom
    assert 'href="runs/20250101-000000-eval/report.html#t-0">a</a>' in loaded.dom
    assert 'href="runs/noop/report.html#t-0">b</a>' in loaded.dom
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "diff-1280.png"
    shot.unlink(missing_ok=True)
    load(page, tmp_path, f"--screenshot={shot}", "--window-size=1280,1200", query="")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_sweep_and_diff_pages_work_in_the_browser(suite, tmp_path):
    sweep = tmp_path / "sweep"
    run_suite(suite, sweep / "0", "trials=2", "agent=oracle")
    run_suite(suite, sweep / "1", "trials=2", "agent=noop")
    diff_page = tmp_path / "diff.html"
    diff_page.write_text(render_diff_html(DIFF))
    for page in (render_sweep_html(sweep), diff_page):
        loaded = load(page, tmp_path)
        assert loaded.console == [], page
        assert loaded.selftest.startswith("SELFTEST PASS"), loaded.selftest


def test_a_tampered_script_is_blocked_and_the_check_notices(run_dir, tmp_path):
    """The CSP pins the script's hash: edit one character and Chromium refuses to run it."""
    page = tmp_path / "tampered.html"
    page.write_text(
        (run_dir / "report.html").read_text().replace('"use strict";', '"use strict"; ')
    )
    loaded = load(page, tmp_path)
    assert loaded.selftest == ""
    assert any("Content Security Policy" in line for line in loaded.console), loaded.console
