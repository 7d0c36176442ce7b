"""Text from files and exceptions prints exactly as written: brackets are never read as markup."""

from __future__ import annotations

import io
import os
import subprocess
import sys

from evalrun.analysis.metrics import summarize
from evalrun.console import make_console, styled
from evalrun.models.records import Outcome, SampleRecord
from evalrun.report.terminal import render
from tests.conftest import REPO

TRICKY = "unknown key [metadata] 'reward_type' in [bold]x[/bold] \\[not a tag]"


def printed(*objects: object) -> str:
    out = io.StringIO()
    console = make_console(file=out, width=200)
    console.print(*objects)
    return out.getvalue()


def test_plain_strings_print_verbatim():
    assert printed(TRICKY) == TRICKY + "\n"


def test_styled_escapes_every_value_and_keeps_its_own_markup():
    line = styled("[red]error:[/] {} ({})", TRICKY, "[/]")
    assert line.plain == f"error: {TRICKY} ([/])"
    assert printed(line) == f"error: {TRICKY} ([/])\n"
    assert any(span.style == "red" for span in line.spans)


def test_task_ids_and_reasons_in_the_terminal_report_keep_their_brackets(tmp_path):
    rec = SampleRecord(
        run_id="r",
        task_id="task-[bold]one",
        fingerprint="f",
        trial=0,
        outcome=Outcome.error,
        reason="tests/test.sh: [metadata] 'reward_type' [red]broke[/red]",
        started_at=0.0,
        finished_at=1.0,
    )
    summary = summarize([rec], {}, run_id="r", trials=1)
    out = io.StringIO()
    render(summary, tmp_path, make_console(file=out, width=200), [rec])
    text = out.getvalue()
    assert "task-[bold]one" in text
    assert "[metadata] 'reward_type' [red]broke[/red]" in text


def test_the_cli_prints_an_error_message_with_its_brackets(tmp_path):
    folder = tmp_path / "suite" / "demo"
    (folder / "tests").mkdir(parents=True)
    (folder / "task.toml").write_text("[verifier.tests]\nrunner = 'bash'\n")
    (folder / "instruction.md").write_text("Do it.\n")
    (folder / "tests" / "test.sh").write_text('echo 1 > "$VERIFIER_DIR/reward.txt"\n')
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalrun.cli.main",
            "check",
            "--strict",
            f"tasks_dir={tmp_path / 'suite'}",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "COLUMNS": "300"},
        timeout=300,
    )
    assert proc.returncode == 2  # the only task cannot load: nothing to check
    assert "error: no task in" in proc.stderr
    assert "unknown table [verifier.tests]" in proc.stderr


def test_every_console_comes_from_the_one_seam():
    """No module makes its own markup-reading console or escapes per call: evalrun.console is
    the one way text reaches the terminal (html/svg pages escape for HTML, not rich)."""
    offenders = []
    for path in sorted((REPO / "evalrun").rglob("*.py")):
        if path.name == "console.py":
            continue
        text = path.read_text()
        if "Console(" in text or "rich.markup import escape" in text:
            offenders.append(str(path.relative_to(REPO)))
    assert offenders == []
