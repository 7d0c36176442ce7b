"""How long `evalrun view` takes to build its index page over hundreds of runs.

    .venv/bin/python bench/view_index.py [--runs 300] [--trials 2] [--repeat 5]

Runs the bundled suite for real twice on `sandbox=local` (agent=oracle and agent=noop, every
task, `--trials` each), then copies those two run directories into `--runs` run directories
with different names and start times: every tenth copy is made partial (summary.json removed,
samples.jsonl cut short), the rest ended. Then it times, each the median of `--repeat`:

- listing the runs (`list_runs`: plan.json, config.yaml, summary.json and one line of
  samples.jsonl per run), cold and again with the files unchanged (`RowCache`, as the server
  keeps it), and rendering the index page from the rows;
- the whole index as the server answers `GET /`, its first load and later ones;
- what the listing would cost if it counted every run's cells from samples.jsonl
  (`RunLog.state()`, as `ls` did before `current_state`), for comparison;
- one run's report page and one diff page, which the view builds only when opened.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from threading import Thread

from rich.console import Console

from evalrun.cli.hydra import compose_config
from evalrun.report.listing import RowCache, list_runs
from evalrun.report.view.index import index_html
from evalrun.report.view.server import serve
from evalrun.report.view.site import Site
from evalrun.run.runner import run
from evalrun.rundir.log import RunLog, find_run_dirs

REPO = Path(__file__).resolve().parent.parent


def real_run(run_dir: Path, agent: str, trials: int) -> Path:
    args = [f"tasks_dir={REPO / 'tasks'}", f"run_dir={run_dir}", f"agent={agent}"]
    args += ["sandbox=local", f"trials={trials}", "concurrency=2"]
    run(compose_config(args), Console(file=io.StringIO()), overrides=args)
    return run_dir


def copies(sources: list[Path], root: Path, count: int) -> None:
    """`count` run directories made from `sources`, a minute apart; every tenth one partial."""
    start = time.time() - count * 60
    for i in range(count):
        target = root / f"20260101-{i:06d}-eval"
        shutil.copytree(sources[i % len(sources)], target, ignore=shutil.ignore_patterns("*.lock"))
        if i % 10 == 9:
            (target / "summary.json").unlink()
            lines = (target / "samples.jsonl").read_bytes().splitlines(keepends=True)
            (target / "samples.jsonl").write_bytes(b"".join(lines[: len(lines) // 2]))
        stamp = start + i * 60
        for path in target.rglob("*"):
            os.utime(path, (stamp, stamp))
        first = json.loads((target / "samples.jsonl").read_bytes().splitlines()[0])
        first["started_at"] = stamp
        rest = (target / "samples.jsonl").read_bytes().splitlines(keepends=True)[1:]
        (target / "samples.jsonl").write_bytes(json.dumps(first).encode() + b"\n" + b"".join(rest))
        os.utime(target / "samples.jsonl", (stamp, stamp))


def timed(repeat: int, work: Callable[[], object]) -> float:
    """The median seconds of `repeat` calls of `work`."""
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        work()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        began = time.perf_counter()
        sources = [real_run(work / "src" / a, a, options.trials) for a in ("oracle", "noop")]
        ran = time.perf_counter() - began
        root = work / "runs"
        copies(sources, root, options.runs)
        samples = sum(1 for _ in RunLog.open(sources[0]).records())
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        print(f"{options.runs} runs ({samples} samples each; two real runs took {ran:.1f} s), ")
        print(f"{size / 1e6:.1f} MB on disk")

        rows = list_runs(root)
        cold = timed(options.repeat, lambda: list_runs(root))
        cache = RowCache()
        list_runs(root, cache)
        warm = timed(options.repeat, lambda: list_runs(root, cache))
        render = timed(options.repeat, lambda: index_html(root, rows))
        dirs = find_run_dirs(root)
        counted = timed(options.repeat, lambda: [RunLog.open(d).state() for d in dirs])
        page = index_html(root, rows)
        server = serve(root)
        Thread(target=server.serve_forever, daemon=True).start()
        first = timed(1, lambda: urllib.request.urlopen(server.url).read())
        again = timed(options.repeat, lambda: urllib.request.urlopen(server.url).read())
        server.shutdown()
        site = Site(root)
        site.rows()
        key, older = [r.run_dir.name for r in rows if r.summary is not None][:2]
        run_page = timed(options.repeat, lambda: site.run_page(key))
        diff_page = timed(options.repeat, lambda: site.diff_page(older, key))

        def ms(seconds: float) -> str:
            return f"{seconds * 1000:8.1f} ms"

        n = len(rows)
        print(f"listing {n} runs, cold (list_runs)                 {ms(cold)}")
        print(f"listing {n} runs again, files unchanged (RowCache)   {ms(warm)}")
        print(f"rendering the index page ({len(page) / 1e3:.0f} kB)                 {ms(render)}")
        print(f"GET / from the server, first load                   {ms(first)}")
        print(f"GET / from the server, later loads                  {ms(again)}")
        print(f"one run's report page ({samples} samples), when opened    {ms(run_page)}")
        print(f"one diff page, when opened                          {ms(diff_page)}")
        print(
            "for comparison, opening every run and counting its cells from samples.jsonl "
            f"(RunLog.state, as ls did): {ms(counted).strip()}"
        )


if __name__ == "__main__":
    main()
