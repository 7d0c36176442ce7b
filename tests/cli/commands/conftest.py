"""The command tests look at the report tests' finished run: its suite and run directory."""

from tests.report.conftest import run_dir, suite

__all__ = ["run_dir", "suite"]  # fixtures
