"""`evalrun diff <run-a> <run-b> [--json] [--html PATH]`: config, task-set and metric deltas.

The comparison is `evalrun.analysis.diff.diff_runs`; it is printed as tables
(`evalrun.report.diff_terminal`) or as JSON, and `--html` also writes it as a page
(`evalrun.report.diff_html`).
"""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from evalrun.cli.arguments import CommandParser
from evalrun.console import make_console
from evalrun.errors import ExitCode


def diff_command(args: list[str], console: Console) -> int:
    """`evalrun diff <run-a> <run-b> [--json] [--html <path>]`; exit 0 (a diff is not a gate)."""
    from evalrun.analysis.diff import diff_runs, partial_warnings
    from evalrun.report.diff_terminal import render_diff
    from evalrun.rundir.readers import read_side

    parser = CommandParser("diff", "Config, task-set and metric differences of two runs.")
    parser.add_argument("run_a", metavar="<run-a>", help="the run before the change")
    parser.add_argument("run_b", metavar="<run-b>", help="the run after it")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument("--html", metavar="PATH", help="also write the comparison as a page")
    options = parser.parse(args)
    as_json, html = options.json, options.html
    result = diff_runs(read_side(options.run_a), read_side(options.run_b))
    if as_json:
        print(json.dumps(result.to_json(), indent=2))
        for line in partial_warnings(result):  # on stderr, so the JSON stays parseable
            make_console(stderr=True).print(line, soft_wrap=True)
    else:
        render_diff(result, console)
    if html:
        from evalrun.report.diff_html import render_diff_html

        Path(html).write_text(render_diff_html(result, Path(html).parent), encoding="utf-8")
        if not as_json:
            console.print(f"html: {html}", highlight=False)
    return ExitCode.OK
