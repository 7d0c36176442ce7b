"""What ships inside evalrun besides code: its Hydra config, the benchmark, the behaviour probes,
the one-time set-up scripts and the docs (`evalrun docs`) - found the same way in a checkout, an
editable install and a wheel.

```
evalrun/bundled/
  conf     -> ../../conf       Hydra config tree (a package, so `pkg://evalrun.bundled.conf` works)
  tasks    -> ../../tasks      the bundled benchmark
  probes   -> ../../probes     the bundled behaviour probes
  scripts  -> ../../scripts    docker-engine.sh and build-base-image.sh (the wheel ships only these)
  docs     -> ../../docs       the guides a user reads (`evalrun docs [topic]` prints them)
```

In git these folders live at the repository root; this package holds relative symlinks to them.
setuptools follows the links when it builds the sdist and the wheel (the `package-data` patterns
in pyproject.toml), so an installed evalrun carries real folders at the same place. Either way
they are found next to this module - there is no second lookup for "running from a checkout".
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

ROOT = Path(str(files(__name__)))  # an on-disk package: evalrun is not run from a zip

# Resolved, so a checkout reports the repository's own folders (/repo/tasks, not the symlink).
CONF_DIR = (ROOT / "conf").resolve()
TASKS_DIR = (ROOT / "tasks").resolve()
PROBES_DIR = (ROOT / "probes").resolve()
SCRIPTS_DIR = (ROOT / "scripts").resolve()
DOCS_DIR = (ROOT / "docs").resolve()

# What a project's config puts on Hydra's search path: pkg://evalrun.bundled.conf
CONF_PACKAGE = f"{__name__}.conf"
