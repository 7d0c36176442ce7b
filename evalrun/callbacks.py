"""The sweep's Hydra callback, light: Hydra instantiates it on every run (a dry run, `--cfg`
too), so its work - `evalrun.sweep`, and through it the gate, the run log and the metrics - is
imported only when a multirun ends.

`SweepSummary.on_multirun_end` writes `<sweep dir>/sweep.json` and prints the jobs side by side
(`evalrun.sweep`), and remembers the worst gate exit code of the jobs, which `evalrun -m ...`
exits with (jobs run in other processes by `hydra/launcher=joblib` included).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

_gate_exit_codes: list[int] = []
_swept_keys: set[str] = set()  # the keys `-m` sweeps over, when this process launched the sweep


def gate_exit_code() -> int:
    """The worst gate exit code of the sweeps summarised in this process (0 when none broke)."""
    return max(_gate_exit_codes, default=0)


def job_header(num: int, overrides: list[str]) -> str:
    """`job 0: agent=oracle` - printed before each job of a sweep: the values swept (all the
    job's overrides when this process did not launch the sweep, e.g. a joblib worker)."""
    from evalrun.usage import parse

    shown = [
        o
        for o, parsed in zip(overrides, parse(overrides), strict=True)
        if not _swept_keys or parsed.key_or_group in _swept_keys
    ]
    return f"job {num}: {' '.join(shown) or '(no overrides)'}"


class SweepSummary(Callback):
    """Hydra callback: the swept keys when a multirun starts (for each job's header), the sweep
    summary when it ends (`evalrun.sweep`)."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from evalrun.usage import parse

        task = [str(o) for o in config.hydra.overrides.task]
        _swept_keys.update(o.key_or_group for o in parse(task) if o.is_sweep_override())

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(str(config.hydra.sweep.dir))
        if not sweep_dir.is_dir():
            return
        from evalrun.console import make_console
        from evalrun.runlog import sweep_jobs
        from evalrun.sweep import write_sweep_summary

        if not sweep_jobs(sweep_dir):  # a dry sweep: each job printed its plan and ran nothing
            make_console().print("dry run: no sweep summary or page (no job ran)")
            return
        sweep = write_sweep_summary(sweep_dir, make_console(wide=True))
        codes = [(job["gate"] or {}).get("exit_code", 0) for job in sweep["jobs"]]
        _gate_exit_codes.append(max(codes, default=0))
