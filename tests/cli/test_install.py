"""What an install knows about itself: `evalrun --version`, wheel-or-checkout provenance, and the
one-line error for a missing optional SDK. (The built wheel itself is proven in a fresh virtualenv
outside the repository by scripts/wheel-smoke.sh, which CI runs.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

import evalrun
from evalrun.cli.install import optional_packages
from evalrun.extras import MissingExtra, install_hint, require
from evalrun.rundir.provenance import install_info, reproduction_info
from tests.conftest import REPO

HEAVY = ("litellm", "opik", "pydantic_ai", "docker", "modal")


def test_version_names_the_install_and_each_sdk_with_its_extra():
    proc = subprocess.run(
        [sys.executable, "-m", "evalrun.cli.main", "--version"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"evalrun {evalrun.__version__} (checkout: {REPO}")
    assert "Hydra" not in proc.stdout  # evalrun's --version, not Hydra's
    docker = next(line for line in lines if line.split()[:1] == ["docker"])
    assert docker.endswith("evalrun[docker]")


def test_version_reads_metadata_without_importing_any_sdk():
    code = (
        "import sys; from evalrun.cli.install import version_text; version_text(); "
        f"print([m for m in {HEAVY!r} if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]"


def test_extras_come_from_evalrun_own_metadata():
    extras = optional_packages()
    assert extras["docker"] == ["docker"] and extras["modal"] == ["modal"]
    assert sorted(extras["litellm"]) == ["agents", "opik"]
    assert extras["pydantic-ai-slim"] == ["agents"]
    assert "pytest" not in extras  # dev tools are no SDK


def test_provenance_says_checkout_here_and_wheel_from_site_packages(tmp_path, monkeypatch):
    assert install_info() == {"kind": "checkout", "path": str(REPO)}
    assert reproduction_info(tmp_path)["git"]["evalrun"]["sha"]

    installed = tmp_path / "venv" / "lib" / "site-packages" / "evalrun"
    installed.mkdir(parents=True)
    monkeypatch.setattr(evalrun, "__file__", str(installed / "__init__.py"))
    assert install_info() == {"kind": "wheel", "path": str(installed)}
    info = reproduction_info(tmp_path)
    assert info["git"]["evalrun"] is None  # no git sha of whatever folder the venv sits in


def test_a_missing_sdk_is_one_line_naming_the_extra():
    with pytest.raises(MissingExtra) as caught:
        require("evalrun_no_such_sdk.sub", "docker", "sandbox=docker")
    assert str(caught.value) == (
        "sandbox=docker needs the evalrun_no_such_sdk.sub package: pip install 'evalrun[docker]'"
    )
    require("yaml", "docker", "anything")  # installed: no error


def test_inside_a_pipx_install_the_hint_is_pipx_inject_with_the_extras_packages(monkeypatch):
    """`pip install 'evalrun[docker]'` does nothing for a pipx install; `pipx inject` does."""
    monkeypatch.setattr(sys, "prefix", "/home/u/.local/share/pipx/venvs/evalrun")
    with pytest.raises(MissingExtra) as caught:
        require("evalrun_no_such_sdk", "docker", "sandbox=docker")
    assert str(caught.value).endswith(": pipx inject evalrun 'docker>=7'")
    everything = install_hint("all")  # nested extras expanded, each package once
    assert everything.startswith("pipx inject evalrun ")
    for package in ("'docker>=7'", "'modal>=1.6'", "opik", "pydantic-ai-slim", "litellm"):
        assert package in everything
    assert everything.count("litellm") == 1
