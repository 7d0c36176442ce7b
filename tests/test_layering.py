"""Who may import whom: the core never imports the Opik package; heavy SDKs load only when used."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

CORE = [
    "evalrun.cli", "evalrun.runner", "evalrun.plan", "evalrun.engine", "evalrun.gate",
    "evalrun.diff", "evalrun.sweep", "evalrun.power", "evalrun.runlog", "evalrun.store",
    "evalrun.judges", "evalrun.check", "evalrun.report.files", "evalrun.report.commands",
    "evalrun.report.listing", "evalrun.probes.report", "evalrun.probes.check",
    "evalrun.trackers.local", "evalrun.sandbox.local", "evalrun.sandbox.bwrap",
    "evalrun.sandbox.docker", "evalrun.sandbox.modal", "evalrun.formats.harbor",
]  # fmt: skip


def test_the_core_never_imports_the_opik_package_or_an_sdk():
    code = (
        f"import sys; [__import__(m) for m in {CORE!r}]; "
        "print(sorted({m.split('.')[0] if not m.startswith('evalrun.opik') else 'evalrun.opik' "
        "for m in sys.modules if m.startswith(('evalrun.opik', 'opik', 'litellm', 'docker', "
        "'modal', 'pydantic_ai'))}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
