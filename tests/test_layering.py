"""Who may import whom: the core never imports the Opik package; heavy SDKs load only when used."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

CORE = [
    "evalrun.cli.main", "evalrun.run.runner", "evalrun.run.plan", "evalrun.run.engine", "evalrun.analysis.gate",
    "evalrun.analysis.diff", "evalrun.analysis.sweep", "evalrun.analysis.power", "evalrun.rundir.log", "evalrun.rundir.store",
    "evalrun.run.judges", "evalrun.honesty.check", "evalrun.report.files", "evalrun.report.commands",
    "evalrun.report.listing", "evalrun.report.probes", "evalrun.honesty.probes",
    "evalrun.trackers.local", "evalrun.sandbox.local", "evalrun.sandbox.bwrap.backend",
    "evalrun.sandbox.docker.backend", "evalrun.sandbox.modal", "evalrun.tasks.harbor.task",
]  # fmt: skip


def test_the_core_never_imports_the_opik_package_or_an_sdk():
    code = (
        f"import sys; [__import__(m) for m in {CORE!r}]; "
        "print(sorted({m.split('.')[0] if not m.startswith('evalrun.integrations.opik') else 'evalrun.integrations.opik' "
        "for m in sys.modules if m.startswith(('evalrun.integrations.opik', 'opik', 'litellm', 'docker', "
        "'modal', 'pydantic_ai'))}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
