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


def gate_exit_code() -> int:
    """The worst gate exit code of the sweeps summarised in this process (0 when none broke)."""
    return max(_gate_exit_codes, default=0)


class SweepSummary(Callback):
    """Hydra callback: write the sweep summary when a multirun ends (`evalrun.sweep`)."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(str(config.hydra.sweep.dir))
        if not sweep_dir.is_dir():
            return
        from evalrun.console import make_console
        from evalrun.sweep import write_sweep_summary

        sweep = write_sweep_summary(sweep_dir, make_console(wide=True))
        codes = [(job["gate"] or {}).get("exit_code", 0) for job in sweep["jobs"]]
        _gate_exit_codes.append(max(codes, default=0))
