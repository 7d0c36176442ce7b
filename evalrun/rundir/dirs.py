"""Every new run gets a directory no other run has: a Hydra callback claims it before Hydra uses it.

Hydra creates a job's output directory with `mkdir(exist_ok=True)`, so two runs started in the
same second (`runs/${now:%Y%m%d-%H%M%S}-eval`) would share one. Before Hydra gets there, this
callback claims the directory with an exclusive mkdir (`evalrun.rundir.store.claim_new_run_dir`: the
stamped name, else `-2`, `-3`, ...) and points Hydra at it:

- a single run: `hydra.run.dir`;
- a multirun: `hydra.sweep.dir`, once, in the launching process; the claimed path is also added
  to the Hydra overrides every job is recomposed from, so jobs - in this process (basic
  launcher) or in worker processes (joblib) - all land in `<claimed sweep>/<job number>`.

A directory given literally (`run_dir=runs/x`, `resume=...`, `hydra.sweep.dir=...`) is left as
it is: it is created, or continued when it holds a run, and the writer lock
(`evalrun.rundir.store.RunLock`) keeps it to one writer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from evalrun.rundir.store import claim_new_run_dir

MULTIRUN_FILE = "multirun.yaml"  # what Hydra writes into a sweep folder before any job runs
_claimed_sweeps: list[Path] = []


def _raw(cfg: DictConfig, key: str) -> Any:
    """The configured (not interpolated) value at dotted `key`."""
    node: Any = OmegaConf.to_container(cfg, resolve=False)
    for part in key.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def is_dir_template(cfg: DictConfig, key: str) -> bool:
    """Whether the configured directory is a template (`runs/${now:%Y%m%d-%H%M%S}-${name}`, the
    default) rather than a literal path: a template names a new run, whose directory must be
    claimed; a literal path is created, or continued when it holds a run."""
    raw = _raw(cfg, key)
    if raw == "${run_dir}":  # hydra.run.dir follows the run_dir knob
        raw = _raw(cfg, "run_dir")
    return isinstance(raw, str) and "${" in raw


def _quoted(path: Path) -> str:
    """`path` as a quoted Hydra override value."""
    return "'" + str(path).replace("\\", "\\\\").replace("'", "\\'") + "'"


class FreshRunDirs(Callback):
    """Claims a fresh directory for a new run or sweep (see the module docstring)."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        if not is_dir_template(config, "hydra.run.dir"):
            return
        claimed = claim_new_run_dir(Path(str(config.hydra.run.dir)))
        with read_write(config.hydra), open_dict(config.hydra):
            config.hydra.run.dir = str(claimed)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        if not is_dir_template(config, "hydra.sweep.dir"):
            return
        claimed = claim_new_run_dir(Path(str(config.hydra.sweep.dir)))
        _claimed_sweeps.append(claimed)
        with read_write(config.hydra), open_dict(config.hydra):
            config.hydra.sweep.dir = str(claimed)
            config.hydra.overrides.hydra.append(f"hydra.sweep.dir={_quoted(claimed)}")


def remove_unused_sweeps() -> None:
    """Remove the sweep folders this process claimed that hold no job (every job failed before
    it wrote a run): Hydra's multirun.yaml alone is no sweep. A folder given literally
    (`hydra.sweep.dir=...`) is never claimed, so never removed."""
    while _claimed_sweeps:
        folder = _claimed_sweeps.pop()
        if not folder.is_dir() or any(p.name != MULTIRUN_FILE for p in folder.iterdir()):
            continue
        (folder / MULTIRUN_FILE).unlink(missing_ok=True)
        folder.rmdir()
