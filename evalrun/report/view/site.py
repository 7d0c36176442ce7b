"""The pages of `evalrun view`, by path: what the server answers and what `--static` writes.

```
index.html                        every run (evalrun.report.view.index), rebuilt on each load
runs/<key>/report.html            a run's report (evalrun.report.html), built when opened
runs/<key>/samples/<task>/<n>/*   a sample's log files, as the report links them (plain text)
diff.html?a=<key>&b=<key>         two runs' diff (evalrun.report.diff_html), built when opened
diffs/<n>.html                    --static: each run's diff with the previous run of its suite
```

`<key>` is a run's folder relative to the listed root. Only folders the last listing found are
served (a key is looked up, never joined onto a path), and a log file only when it resolves
inside its run's samples/ folder. Run directories are read only through their typed readers
(`RunLog`, `load_run`, `read_side`); nothing is written into them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from evalrun.analysis.diff import diff_runs
from evalrun.errors import UsageError
from evalrun.report.diff_html import render_diff_html
from evalrun.report.html import run_html
from evalrun.report.listing import RowCache, RunRow, list_runs
from evalrun.report.page import render
from evalrun.report.rundata import load_run
from evalrun.report.view.index import INDEX_FILE, RUNS_PREFIX, index_html, report_href, run_key
from evalrun.rundir.readers import read_side

SAMPLES = "samples"


class NotFound(UsageError):
    """A path the view does not serve, or a run the last listing did not find."""


@dataclass(frozen=True)
class Page:
    body: bytes
    content_type: str


def html_page(text: str) -> Page:
    return Page(text.encode("utf-8"), "text/html; charset=utf-8")


def message_html(title: str, message: str, home: str) -> str:
    """A page saying what went wrong (a run that cannot be read, two runs that cannot be
    compared), with the way back to the index."""
    return render("message.html.j2", title=title, message=message, home=home)


def _home(depth: int) -> str:
    """The index, from a page `depth` folders below it."""
    return "../" * depth + INDEX_FILE


class Site:
    """The view of the runs under `root`."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._dirs: dict[str, Path] = {}
        self._cache = RowCache()

    def rows(self) -> list[RunRow]:
        """Every run under the root, newest first (`list_runs`; a run whose files did not
        change since the last listing is not read again); remembers their keys."""
        rows = list_runs(self.root, self._cache)
        self._dirs = {run_key(self.root, r.run_dir): r.run_dir for r in rows}
        return rows

    def run_dir(self, key: str) -> Path:
        if key not in self._dirs:
            self.rows()  # a run that started since the index was built
        if key not in self._dirs:
            raise NotFound(f"no run {key!r} under {self.root}")
        return self._dirs[key]

    # --- pages ------------------------------------------------------------------------------
    def index(self, pairs: dict[str, str] | None = None) -> str:
        return index_html(self.root, self.rows(), pairs)

    def run_page(self, key: str) -> str:
        """The run's report.html, built now from its files (a running run shows what it has)."""
        depth = 2 + key.count("/")  # runs/<key>/report.html
        return run_html(load_run(self.run_dir(key)), home=_home(depth))

    def diff_page(self, a: str, b: str, depth: int = 0) -> str:
        """The diff of run `a` (before) and run `b` (after), for a page `depth` folders below
        the index; `UsageError` when either has not ended (`read_side`)."""
        result = diff_runs(read_side(self.run_dir(a)), read_side(self.run_dir(b)))
        up = "../" * depth
        reports = (up + report_href(a), up + report_href(b))
        return render_diff_html(result, reports=reports, home=_home(depth))

    def sample_file(self, key: str, rel: str) -> Path:
        """A log file of one of the run's samples; `NotFound` unless it is a file inside the
        run's samples/ folder."""
        base = (self.run_dir(key) / SAMPLES).resolve()
        path = (base / rel).resolve()
        if not path.is_relative_to(base) or not path.is_file():
            raise NotFound(f"{key}: no sample file {rel!r}")
        return path

    def split(self, path: str) -> tuple[str, str]:
        """`runs/<key>/<rest>` as (key, rest), for the longest key the listing knows."""
        inner = path.removeprefix(RUNS_PREFIX + "/")
        for attempt in range(2):
            for key in sorted(self._dirs, key=len, reverse=True):
                if inner.startswith(key + "/"):
                    return key, inner[len(key) + 1 :]
            if attempt == 0:
                self.rows()
        raise NotFound(f"{path}: no such run under {self.root}")

    # --- the static copy --------------------------------------------------------------------
    def write_static(self, out: Path) -> list[Path]:
        """Write the view into `out`: the index, every run's report (its samples/ linked, not
        copied, so the log links work where the runs are) and each run's diff with the
        previous run of its suite. Returns the pages written."""
        rows = self.rows()
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for row in rows:
            key = run_key(self.root, row.run_dir)
            folder = out / RUNS_PREFIX / key
            folder.mkdir(parents=True, exist_ok=True)
            try:
                text = self.run_page(key)
            except UsageError as exc:
                text = message_html(key, str(exc), _home(2 + key.count("/")))
            written.append(_write(folder / "report.html", text))
            samples = row.run_dir / SAMPLES
            link = folder / SAMPLES
            if samples.is_dir() and not link.is_symlink():
                link.symlink_to(os.path.abspath(samples), target_is_directory=True)
        pairs = {}
        for n, (a, b) in enumerate(previous_pairs(self.root, rows)):
            name = f"diffs/{n}.html"
            written.append(_write(out / name, self.diff_page(a, b, depth=1)))
            pairs[f"{a}\n{b}"] = name
        written.insert(0, _write(out / INDEX_FILE, index_html(self.root, rows, pairs)))
        return written


def previous_pairs(root: Path, rows: list[RunRow]) -> list[tuple[str, str]]:
    """(older key, newer key) for each run that ended and the run of its suite that ended
    before it."""
    ended = sorted((r for r in rows if r.summary is not None), key=lambda r: r.started or 0.0)
    last: dict[str, str] = {}
    pairs = []
    for row in ended:
        key = run_key(root, row.run_dir)
        if row.suite_name in last:
            pairs.append((last[row.suite_name], key))
        last[row.suite_name] = key
    return pairs


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
