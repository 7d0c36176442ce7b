"""`evalrun view` in a real headless Chromium, driven over the DevTools protocol (`cdp`).

The command is started as a user starts it, on a folder of real runs (the bundled suite with
agent=oracle and agent=noop on sandbox=local and agent=oracle on sandbox=bwrap, and a hostile
suite); the browser loads its index over HTTP, picks two runs with the mouse, opens their diff,
drills into a run's report and one sample, and the page logs nothing on the way (no script
error, no load the CSP blocked). Markup the runs carry never becomes an element. The --static
copy works from disk the same way, for the pairs it holds. Screenshots of the three pages are
taken every time; with EVALRUN_UPDATE_SCREENSHOTS=1 they replace artifacts/view-*.png (kept in
the repository: the README shows them), else they go to the test's temporary folder, so a test
run leaves the repository unchanged.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from evalrun.report.view.site import Site
from tests.conftest import REPO
from tests.report.view.cdp import Browser
from tests.report.view.conftest import RUNS

pytestmark = pytest.mark.browser

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def shots(tmp_path):
    """Where the screenshots go: artifacts/ when asked to refresh them, else a temp folder."""
    return REPO / "artifacts" if os.environ.get("EVALRUN_UPDATE_SCREENSHOTS") == "1" else tmp_path


@pytest.fixture
def view_url(runs_root):
    """`evalrun view <runs>` running in its own process; its URL from the line it prints."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalrun.cli.main", "view", str(runs_root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("evalrun view: http://127.0.0.1:"), line + proc.stderr.read()
    yield line.split()[2]
    proc.send_signal(signal.SIGINT)  # Ctrl-C stops it, cleanly
    assert proc.wait(timeout=30) == 0, proc.stderr.read()


@pytest.fixture
def browser(tmp_path):
    opened = Browser(tmp_path / "chromium-profile", width=1280, height=900)
    yield opened
    opened.close()


def rows(browser: Browser) -> list[str]:
    return browser.js("[...document.querySelectorAll('#runs tbody tr')].map(r => r.dataset.key)")


def no_injection(browser: Browser) -> None:
    """Nothing the runs carry became an element or ran: one script (the page's), no image."""
    assert browser.js("typeof window.pwned") == "undefined"
    assert browser.js("document.scripts.length") == 1
    assert browser.js("document.images.length") == 0


def choose_metric(browser: Browser, name: str) -> None:
    """Choose the trend's metric in its <select>, as a change of the user's would."""
    browser.js(
        "(() => { const s = document.getElementById('trend-metric');"
        f" s.value = {json.dumps(name)}; s.dispatchEvent(new Event('change')); }})()"
    )


def test_runs_listed_two_picked_open_their_diff_and_a_run_and_sample_open(view_url, browser, shots):
    oracle, noop, bwrap, hostile = RUNS
    browser.open(view_url)
    assert rows(browser) == [hostile, bwrap, noop, oracle]  # newest first
    agents = browser.js("[...document.querySelectorAll('#runs tbody tr')].map(r => r.innerText)")
    assert "oracle" in agents[1] and "bwrap" in agents[1] and "1.00 [0.34, 1.00]" in agents[1]
    assert "noop" in agents[2] and "0.00 [0.00, 0.66]" in agents[2] and "complete" in agents[2]
    no_injection(browser)

    # the trend follows the metric chosen
    shown = "[...document.querySelectorAll('.trend')].filter(t => t.offsetHeight).map(t => t.dataset.metric)"
    assert browser.js(shown) == ["pass@1"]
    choose_metric(browser, "verify latency p50")
    assert browser.js(shown) == ["verify latency p50"]
    choose_metric(browser, "pass@1")
    assert browser.js("document.querySelectorAll('.trend:not(.hide) circle').length") == 4

    # pick noop then oracle with the mouse: the diff runs older -> newer
    assert browser.js("document.getElementById('open-diff').disabled") is True
    browser.click(f"tr[data-key='{noop}'] input.pick")
    browser.click(f"tr[data-key='{oracle}'] input.pick")
    assert browser.js("document.getElementById('compare-note').textContent") == (
        f"a {oracle} → b {noop}"
    )
    assert browser.js("document.getElementById('open-diff').disabled") is False
    assert browser.screenshot(shots / "view-index.png").startswith(PNG)

    browser.click("#open-diff", navigates=True)
    assert browser.js("location.pathname + location.search") == f"/diff.html?a={oracle}&b={noop}"
    assert browser.js("document.getElementById('verdict').textContent").startswith(
        "pass@1 1.00 → 0.00 (-1.00"
    )
    assert browser.js("document.querySelectorAll('table.taskdiff tbody tr').length") == 2
    assert browser.screenshot(shots / "view-diff.png").startswith(PNG)

    # back to every run, then into the bwrap run's report and one of its samples
    browser.click(".home a", navigates=True)
    browser.click(f"tr[data-key='{bwrap}'] a.run", navigates=True)
    assert browser.js("location.pathname") == f"/runs/{bwrap}/report.html"
    assert "sandbox bwrap" in browser.js("document.querySelector('.meta').innerText")
    browser.click("a.dot[href='#s-1-0']")
    assert browser.wait_until("document.getElementById('s-1-0').open") is True
    assert browser.js("document.getElementById('t-1').open") is True
    assert "002-factorial-missing-return" in browser.js(
        "document.querySelector('#t-1 > summary').innerText"
    )
    assert browser.screenshot(shots / "view-run.png").startswith(PNG)
    assert browser.logged == []


def test_markup_a_run_carries_stays_text_in_the_browser(view_url, browser):
    """The hostile run: its folder name, task id and failure reason are markup."""
    hostile = RUNS[3]
    browser.open(view_url)
    no_injection(browser)
    assert (
        browser.js(f"document.querySelector('tr[data-key=\"{hostile}\"] a.run').textContent")
        == hostile
    )
    browser.click(f"tr[data-key='{hostile}'] a.run", navigates=True)
    no_injection(browser)
    browser.click("a.dot[href='#s-0-0']")
    assert browser.wait_until("document.getElementById('s-0-0').open") is True
    why = browser.js("document.querySelector('#s-0-0 .why pre').textContent")
    assert why.startswith("FAIL: </pre></script><script>window.pwned=2</script><img")
    no_injection(browser)
    assert browser.logged == []


def test_the_static_copy_opens_from_disk_with_each_runs_diff_with_the_previous(runs, browser):
    oracle, noop, bwrap, _ = RUNS
    out = runs.parent / "site"
    Site(runs).write_static(out)
    browser.open((out / "index.html").as_uri())
    browser.click(f"tr[data-key='{oracle}'] input.pick")
    browser.click(f"tr[data-key='{bwrap}'] input.pick")
    note = browser.js("document.getElementById('compare-note').textContent")
    assert note.endswith(f"for these two: evalrun diff {oracle} {bwrap} --html diff.html")
    assert browser.js("document.getElementById('open-diff').disabled") is True
    browser.click(f"tr[data-key='{oracle}'] input.pick")  # untick: noop and bwrap are adjacent
    browser.click(f"tr[data-key='{noop}'] input.pick")
    browser.click("#open-diff", navigates=True)
    assert browser.js("location.pathname").endswith("/site/diffs/1.html")
    assert browser.js("document.getElementById('verdict').textContent").startswith(
        "pass@1 0.00 → 1.00"
    )
    browser.click("table.taskdiff tbody tr a", navigates=True)
    assert browser.js("location.pathname").endswith(f"/site/runs/{noop}/report.html")
    assert browser.js("document.getElementById('t-0').open") is True
    assert browser.logged == []
