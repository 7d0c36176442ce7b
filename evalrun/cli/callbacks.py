"""The sweep's Hydra callback, light: Hydra instantiates it on every run (a dry run, `--cfg`
too), so its work - `evalrun.analysis.sweep`, and through it the gate, the run log and the
metrics, and the sweep's reports - is imported only when a multirun ends.

`SweepSummary.on_multirun_end` writes `<sweep dir>/sweep.json` (`evalrun.analysis.sweep`), prints
the jobs side by side (`evalrun.report.sweep_terminal`), writes the sweep page
(`evalrun.report.sweep_html`), and remembers the worst gate exit code of the jobs, which
`evalrun -m ...` exits with (jobs run in other processes by `hydra/launcher=joblib` included).

A stop signal (Ctrl-C, SIGTERM, SIGHUP: `evalrun.run.engine.STOP_SIGNALS`) ends the sweep as it
ends a run: the job in flight is cancelled and closed partial, no further job starts, the summary
of the jobs so far is written, and the command to finish the sweep is printed; a second signal
exits at once. With joblib, each worker leaves the launcher's process group at its first job, so
a signal sent to the group (a terminal's Ctrl-C, `timeout`) reaches the jobs once, forwarded by
the launcher - as one sent to the launcher alone (`docker stop`, Kubernetes) does.
"""

from __future__ import annotations

import os
import shlex
import signal
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

_gate_exit_codes: list[int] = []
_swept_keys: set[str] = set()  # the keys `-m` sweeps over, when this process launched the sweep
_stopped: list[signal.Signals] = []  # the stop signal that stopped this process's sweep, if any
LAUNCHER_PID = "EVALRUN_SWEEP_LAUNCHER"  # the launching process's pid, for its job processes


def gate_exit_code() -> int:
    """The worst gate exit code of the sweeps summarised in this process (0 when none broke)."""
    return max(_gate_exit_codes, default=0)


def sweep_stopped() -> signal.Signals | None:
    """The stop signal that stopped this process's sweep (no further job starts), if one did."""
    return _stopped[0] if _stopped else None


def stop_exit_code() -> int:
    """The exit status of the signal that stopped the sweep (0 when none did)."""
    from evalrun.run.engine import STOP_SIGNALS

    stopped = sweep_stopped()
    return STOP_SIGNALS[stopped] if stopped else 0


def job_ended(status: int) -> None:
    """A job's exit status: one a stop signal gave (130, 143, 129) stops the sweep."""
    from evalrun.run.engine import STOP_SIGNALS

    signals = [signum for signum, code in STOP_SIGNALS.items() if code == status]
    if signals and not _stopped:
        _stopped.append(signals[0])


def enter_job() -> None:
    """In a joblib worker, at its first job: leave the launcher's process group (a signal sent
    to the group then reaches this process only as the launcher forwards it: once), and note a
    stop signal that comes between jobs. Nothing in the launching process."""
    launcher = os.environ.get(LAUNCHER_PID)
    if launcher in (None, str(os.getpid())) or os.getpgid(0) == os.getpid():
        return
    os.setpgid(0, 0)
    _on_stop_signals(forward=False)


def _on_stop_signals(forward: bool) -> None:
    """Between jobs (a run installs its own handlers while it runs): the first stop signal
    starts no further job - and, `forward`ed, reaches the job processes - the second exits."""
    from evalrun.run.engine import STOP_SIGNALS, drop_hung_up_terminal, say_now, stopped_by

    def handler(signum: int, frame: object) -> None:
        if forward:
            _signal_job_processes(signum)
        if _stopped:
            say_now(f"{stopped_by(signum)} again: exiting now")
            os._exit(STOP_SIGNALS[signal.Signals(signum)])
        _stopped.append(signal.Signals(signum))
        if signum == signal.SIGHUP:
            drop_hung_up_terminal()
        if forward:
            say_now(f"{stopped_by(signum)}: no further job starts (a second signal exits at once)")

    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) != signal.SIG_IGN:
            signal.signal(signum, handler)


def _signal_job_processes(signum: int) -> None:
    """Send `signum` to this process's job processes: its children that lead a process group of
    their own (`enter_job`)."""
    for entry in Path("/proc").iterdir():
        try:
            ppid, pgrp = (entry / "stat").read_text().rpartition(")")[2].split()[1:3]
        except (OSError, ValueError):  # not a process, or it ended meanwhile
            continue
        if int(ppid) == os.getpid() and pgrp == entry.name:
            try:
                os.kill(int(entry.name), signum)
            except OSError:
                continue


def finish_command(config: DictConfig) -> str:
    """The command that finishes a stopped sweep: the same overrides, into the same folder (a
    job's run directory that holds a run is resumed, a missing one runs)."""
    hydra = config.hydra
    typed = [*hydra.overrides.hydra, *hydra.overrides.task]
    kept = [o for o in typed if not o.startswith(("hydra.sweep.dir=", "hydra.mode="))]
    args = ["evalrun", "-m", *kept, f"hydra.sweep.dir={hydra.sweep.dir}"]
    return " ".join(shlex.quote(str(arg)) for arg in args)


def job_header(num: int, overrides: list[str]) -> str:
    """`job 0: agent=oracle` - printed before each job of a sweep: the values swept (all the
    job's overrides when this process did not launch the sweep, e.g. a joblib worker)."""
    from evalrun.config.usage import parse

    shown = [
        o
        for o, parsed in zip(overrides, parse(overrides), strict=True)
        if not _swept_keys or parsed.key_or_group in _swept_keys
    ]
    return f"job {num}: {' '.join(shown) or '(no overrides)'}"


class SweepSummary(Callback):
    """Hydra callback: the swept keys when a multirun starts (for each job's header), the sweep
    summary when it ends (`evalrun.analysis.sweep`)."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from evalrun.config.usage import parse

        task = [str(o) for o in config.hydra.overrides.task]
        _swept_keys.update(o.key_or_group for o in parse(task) if o.is_sweep_override())
        os.environ[LAUNCHER_PID] = str(os.getpid())  # inherited by joblib's workers
        _on_stop_signals(forward=True)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(str(config.hydra.sweep.dir))
        if not sweep_dir.is_dir():
            return
        from evalrun.analysis.sweep import SWEEP_FILE
        from evalrun.console import make_console
        from evalrun.report.sweep_html import render_sweep_html
        from evalrun.report.sweep_terminal import render_sweep
        from evalrun.rundir.log import sweep_jobs
        from evalrun.rundir.readers import write_sweep_summary

        if not sweep_jobs(sweep_dir):  # a dry sweep: each job printed its plan and ran nothing
            make_console().print("dry run: no sweep summary or page (no job ran)")
            return
        console = make_console(wide=True)
        sweep = write_sweep_summary(sweep_dir)
        render_sweep(sweep, console)
        console.print(f"sweep summary: {sweep_dir / SWEEP_FILE}", highlight=False)
        if sweep.jobs:
            page = render_sweep_html(sweep_dir)
            console.print(f"sweep report: {page}", highlight=False, soft_wrap=True)
        codes = [job.gate.exit_code if job.gate else 0 for job in sweep.jobs]
        _gate_exit_codes.append(max(codes, default=0))
        stopped = sweep_stopped()
        if stopped:
            from evalrun.console import styled
            from evalrun.run.engine import stopped_by

            console.print(
                styled("[yellow]{}: the sweep is partial.[/]", stopped_by(stopped)),
                f"Finish it with: {finish_command(config)}",
                soft_wrap=True,
            )
