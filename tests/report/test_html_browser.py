"""The reports in a real headless Chromium (Debian package `chromium`).

Chromium loads each page from disk with `?selftest=1`; the page's own script then clicks a numeric
column header twice, opens one sample's drill-down and writes what it saw into `<pre id=selftest>`
(see evalrun/report/page.py). We read the DOM Chromium dumps after that, and its stderr: the page
never logs to the console, so any console line (an uncaught error, a load the CSP blocked) fails.
A screenshot of the run report is kept in artifacts/ for people to look at (not committed).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from evalrun.report.html import render_diff_html, render_sweep_html
from tests.conftest import REPO, require_engine
from tests.report.conftest import run_suite
from tests.report.test_html import DIFF

pytestmark = pytest.mark.browser

ARTIFACTS = REPO / "artifacts"


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
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
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


def test_run_report_sorts_opens_a_sample_and_logs_nothing(run_dir, tmp_path):
    loaded = load(run_dir / "report.html", tmp_path)
    assert loaded.console == []
    assert loaded.selftest.startswith("SELFTEST PASS"), loaded.selftest
    assert "FAIL" not in loaded.selftest.replace("SELFTEST PASS", "")
    assert "drill-down s-0-0 opens" in loaded.selftest
    assert "plots 4, samples 12" in loaded.selftest
    rows = re.search(r'<table class="sortable tasks">.*?<tbody>(.*?)</tbody>', loaded.dom, re.S)
    assert rows and rows.group(1).count("<tr>") == 4
    assert loaded.dom.count('<svg class="plot"') == 4
    assert re.search(r'<details class="sample" id="s-0-0" open="">', loaded.dom)
    # the hostile agent output stayed text: no element was created from it
    assert "<img src=x" not in loaded.dom and "&lt;img src=x onerror=alert(1)&gt;" in loaded.dom


def test_run_report_screenshot_is_kept_as_an_artifact(run_dir, tmp_path):
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report.png"
    shot.unlink(missing_ok=True)
    load(
        run_dir / "report.html",
        tmp_path,
        f"--screenshot={shot}",
        "--window-size=1400,2000",
        query="",
    )
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a page, not a blank


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
