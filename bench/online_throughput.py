"""`evalrun online` against stand-ins: what evalrun + the opik SDK cost per thread.

    .venv/bin/python bench/online_throughput.py [--threads 200] [--workers 1 4]

A live project of N two-turn threads is logged into `tests/opik_standin.py` (a local stand-in for
Opik's REST API - no real Opik is reachable here) and judged by the two bundled criteria through
litellm against `tests/openai_standin.py`, which answers at once. So the figure is evalrun's and
the SDK's own overhead per thread (listing, reading the thread's traces, two G-Eval calls through
litellm, the evaluation trace, the feedback write, the record), not a model's latency. Then the
same command again: every thread is already scored, so it only lists and skips. litellm is
imported before timing (4-8 s once per process, not per thread).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPIK_ANALYTICS_ENABLE", "false")

from rich.console import Console

from evalrun.cli.hydra import compose_config
from evalrun.integrations.opik.online import run_online
from tests.integrations.opik.online.helpers import judge_reply, log_threads, online_overrides
from tests.openai_standin import Standin
from tests.opik_standin import OpikStandIn


def timed(base_url: str, run_dir: Path, workers: int) -> float:
    cfg = compose_config(
        online_overrides(base_url, run_dir, f"workers={workers}", "limit=100000"),
        config_name="online",
    )
    start = time.perf_counter()
    code = run_online(cfg, Console(file=io.StringIO()))
    assert code == 0
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=200)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 4])
    args = parser.parse_args()
    os.environ["ONLINE_JUDGE_KEY"] = "sk-bench"
    import litellm  # noqa: F401 - its import (seconds) is not per-thread overhead

    threads = {
        f"t-{n:04d}": [(f"q{n}", "a [quality 6]"), (f"q{n} again", "b [quality 7]")]
        for n in range(args.threads)
    }
    with Standin([], responder=judge_reply) as model, tempfile.TemporaryDirectory() as tmp:
        for workers in args.workers:
            with OpikStandIn() as opik:
                os.environ["OPIK_URL_OVERRIDE"] = opik.url
                log_threads(threads)
                first = timed(model.base_url, Path(tmp) / f"w{workers}", workers)
                again = timed(model.base_url, Path(tmp) / f"w{workers}-again", workers)
                print(
                    f"workers={workers}: {args.threads} threads judged in {first:.2f} s "
                    f"({1000 * first / args.threads:.1f} ms/thread, 2 judge calls each); "
                    f"re-run (all already scored, nothing sent): {again:.2f} s"
                )


if __name__ == "__main__":
    main()
