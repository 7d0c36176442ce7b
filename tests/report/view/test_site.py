"""`evalrun view`'s pages: served on localhost (the real server, over HTTP) and written with
--static; a run's report and a diff are built when opened, and what the runs hold stays text."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from threading import Thread
from urllib.parse import quote

import pytest

from evalrun.report.view.server import serve
from tests.cli.test_main import evalrun
from tests.report.view.conftest import HOSTILE_REASON, HOSTILE_RUN, RUNS


@pytest.fixture
def server(runs):
    running = serve(runs)
    Thread(target=running.serve_forever, daemon=True).start()
    yield running
    running.shutdown()
    running.server_close()


def get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url) as reply:
            return reply.status, reply.headers["Content-Type"], reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode()


def test_the_index_a_report_a_sample_log_and_a_diff_are_served(server):
    status, kind, index = get(server.url)
    assert (status, kind) == (200, "text/html; charset=utf-8")
    assert index.count('<a class="run"') == 4
    status, _, report = get(server.url + f"runs/{RUNS[1]}/report.html")
    assert status == 200 and "agent <b>noop</b>" in report
    assert '<a href="../../index.html">&larr; all runs</a>' in report
    log = re.search(r'href="(samples/[^"]+/verify\.log)"', report)
    assert log is not None
    status, kind, text = get(server.url + f"runs/{RUNS[1]}/" + log.group(1))
    assert (status, kind) == (200, "text/plain; charset=utf-8") and "FAIL" in text
    status, _, diff = get(server.url + f"diff.html?a={RUNS[0]}&b={RUNS[1]}")
    assert status == 200
    assert 'id="verdict">pass@1 1.00 → 0.00' in diff
    assert f'href="runs/{RUNS[0]}/report.html#t-0">a</a>' in diff  # rows open each run's task


def test_a_run_that_has_not_ended_cannot_be_diffed_and_the_page_says_why(runs, server):
    (runs / RUNS[1] / "summary.json").unlink()
    status, _, page = get(server.url + f"diff.html?a={RUNS[0]}&b={RUNS[1]}")
    assert status == 409
    assert "is not the directory of a run that ended: summary.json not found" in page


def test_only_listed_runs_and_their_sample_files_are_served(runs, server):
    for path in (
        "runs/nope/report.html",
        f"runs/{RUNS[0]}/config.yaml",
        f"runs/{RUNS[0]}/samples/../config.yaml",
        f"runs/{RUNS[0]}/samples/%2e%2e/config.yaml",
        f"runs/{RUNS[0]}/samples/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "etc/passwd",
    ):
        status, _, page = get(server.url + path)
        assert status == 404, path
        assert "_target_" not in page and "root:" not in page
    assert (
        get(server.url + "runs/nope/report.html")[2].count(
            "runs/nope/report.html: no such run under"
        )
        == 1
    )


def test_a_request_for_another_host_name_is_refused(server):
    """DNS rebinding: a page on another host name resolved to 127.0.0.1 reads no run."""
    request = urllib.request.Request(server.url, headers={"Host": "attacker.example"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request)
    assert refused.value.code == 403
    assert RUNS[0] not in refused.value.read().decode()
    local = server.url.replace("127.0.0.1", "localhost")
    assert get(local)[0] == 200


def test_a_port_in_use_is_one_line_naming_it(server, runs):
    port = server.server_address[1]
    proc = evalrun("view", str(runs), "--port", str(port))
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith(f"error: --port {port}: cannot listen on it (")


def test_a_run_that_started_after_the_index_was_built_is_found(runs, server):
    get(server.url)
    (runs / RUNS[0]).rename(runs / "later")
    assert get(server.url + "runs/later/report.html")[0] == 200


def test_markup_from_the_runs_stays_text_on_every_page(server):
    key = quote(HOSTILE_RUN)
    _, _, report = get(server.url + f"runs/{key}/report.html")
    _, _, diff = get(server.url + f"diff.html?a={RUNS[0]}&b={quote(HOSTILE_RUN)}")
    for page in (get(server.url)[2], report, diff):
        assert page.count("<script") == 1  # the page's own script only
        assert "<img" not in page
    assert "&lt;script&gt;window.pwned=1&lt;" in report  # the task id
    assert HOSTILE_REASON not in report and "&lt;/pre&gt;&lt;/script&gt;&lt;script&gt;" in report
    assert "&lt;script&gt;window.pwned=1&lt;" in diff  # a task of only one side is named


def test_static_copy_holds_the_index_every_report_and_each_runs_diff_with_the_last(runs, tmp_path):
    out = tmp_path / "site"
    proc = evalrun("view", str(runs), "--static", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"wrote 7 pages: {out / 'index.html'}")
    index = (out / "index.html").read_text()
    assert '"20260101-100000-oracle\\n20260101-110000-noop": "diffs/0.html"' in index.replace(
        "&#34;", '"'
    )
    for name in RUNS:  # each report, its samples' logs linked where the run keeps them
        assert (out / "runs" / name / "report.html").is_file()
        assert (out / "runs" / name / "samples").resolve() == (runs / name / "samples")
    assert (out / "runs" / RUNS[0] / "samples" / "001-fizzbuzz-off-by-one" / "0").is_dir()
    diff = (out / "diffs" / "0.html").read_text()
    assert 'href="../runs/20260101-100000-oracle/report.html#t-0">a</a>' in diff
    assert 'href="../index.html">&larr; all runs' in diff


def test_view_says_what_is_wrong_with_its_arguments(tmp_path):
    missing = evalrun("view", str(tmp_path / "nowhere"), "--static", str(tmp_path / "o"))
    assert missing.returncode == 2
    assert "nowhere: no such directory (expected a folder of runs, e.g. runs/)" in missing.stderr
    port = evalrun("view", str(tmp_path), "--port", "70000")
    assert port.returncode == 2 and "--port: expected 0-65535, got 70000" in port.stderr
    assert "evalrun view [runs_dir]   " in evalrun("--help").stdout
