"""`evalrun view [runs_dir] [--port N] [--static OUT]`: every run under a folder on one local
page - served on localhost until Ctrl-C, or written as static files.

The pages are `evalrun.report.view` (index, site, server); this module parses the arguments,
says where to look, and serves.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from evalrun.cli.arguments import CommandParser
from evalrun.errors import ExitCode, UsageError


def view_command(args: list[str], console: Console) -> int:
    """Serve (or with --static, write) the view of the runs under runs_dir; exit 0."""
    parser = CommandParser(
        "view",
        "Every run under a folder on one local page: runs with agent, model, sandbox, suite, "
        "pass@1 and its interval, cost and state; a trend of a metric; the diff of two runs "
        "picked; each run's report and samples.",
    )
    parser.add_runs_dir()
    parser.add_argument(
        "--port", type=int, default=0, help="the localhost port to serve on (default: a free one)"
    )
    parser.add_argument(
        "--static", metavar="OUT", type=Path, help="write the pages into OUT instead of serving"
    )
    options = parser.parse(args)
    root = options.root.expanduser()
    if not root.is_dir():
        raise UsageError(f"{root}: no such directory (expected a folder of runs, e.g. runs/)")
    if not 0 <= options.port <= 65535:
        raise UsageError(f"--port: expected 0-65535, got {options.port}")
    if options.static is not None:
        from evalrun.report.view.site import Site

        written = Site(root).write_static(options.static.expanduser())
        console.print(f"wrote {len(written)} pages: {written[0]}", highlight=False, soft_wrap=True)
        return ExitCode.OK
    return _serve(root, options.port, console)


def _serve(root: Path, port: int, console: Console) -> int:
    from evalrun.report.view.server import serve

    try:
        server = serve(root, port)
    except OSError as exc:
        raise UsageError(f"--port {port}: cannot listen on it ({exc.strerror})") from exc
    console.print(f"evalrun view: {server.url}  (runs under {root}; Ctrl-C stops)", highlight=False)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return ExitCode.OK
