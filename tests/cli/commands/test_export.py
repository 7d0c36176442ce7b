"""`evalrun export <run> --format atif`: a run's trajectory.json files, also for a run made
before evalrun wrote them, identical to what the run writes as it goes."""

from __future__ import annotations

from tests.atif_check import checked_trajectories
from tests.cli.test_main import evalrun


def test_export_writes_what_the_run_wrote_into_the_run_or_another_folder(run_dir, tmp_path):
    written = {p: p.read_text() for p in run_dir.glob("samples/*/*/trajectory.json")}
    assert len(written) == len(checked_trajectories(run_dir)) > 0
    for path in written:  # a run from before trajectory.json existed
        path.unlink()

    done = evalrun("export", str(run_dir), "--format", "atif")
    assert done.returncode == 0, done.stderr
    assert f"{len(written)} trajectories (ATIF) written" in done.stdout
    assert {p: p.read_text() for p in run_dir.glob("samples/*/*/trajectory.json")} == written

    out = tmp_path / "atif"
    done = evalrun("export", str(run_dir), "--format", "atif", "--out", str(out))
    assert done.returncode == 0, done.stderr
    exported = {p.relative_to(out): p.read_text() for p in out.glob("*/*/trajectory.json")}
    assert exported == {p.relative_to(run_dir / "samples"): text for p, text in written.items()}


def test_export_refuses_a_folder_that_is_not_a_run_and_an_unknown_format(tmp_path):
    done = evalrun("export", str(tmp_path), "--format", "atif")
    assert done.returncode == 2
    assert f"{tmp_path} is not a run directory" in done.stderr
    done = evalrun("export", str(tmp_path), "--format", "xml")
    assert done.returncode == 2
    assert "argument --format: invalid choice: 'xml' (choose from 'atif')" in done.stderr
