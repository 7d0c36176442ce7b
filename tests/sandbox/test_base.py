"""The environment every sandboxed command sees, and what a verifier's adds."""

from __future__ import annotations

from evalrun.sandbox.base import PRIVATE_DIR, VERIFIER_SITE_DIR, sandbox_env

PATH = "/usr/bin:/bin"


def test_a_verifier_python_starts_with_the_harness_hook_and_a_fresh_bytecode_cache():
    env = sandbox_env(home="/h", tmpdir="/vt", path=PATH, verifier=True)
    assert env["PYTHONPATH"] == f"{PRIVATE_DIR}/{VERIFIER_SITE_DIR}"
    assert env["PYTHONPYCACHEPREFIX"] == "/vt/pycache"
    assert env["PYTHONNOUSERSITE"] == "1"


def test_the_hook_goes_before_a_pythonpath_the_caller_gives():
    """A task's own PYTHONPATH (a Harbor verifier.env) is kept, after the hook, which must be
    first for python to import the harness's sitecustomize rather than a planted one."""
    env = sandbox_env(
        home="/h",
        tmpdir="/vt",
        path=PATH,
        extra={"PYTHONPATH": "/app/lib"},
        verifier=True,
        private_dir="/tmp/x/private",
    )
    assert env["PYTHONPATH"] == f"/tmp/x/private/{VERIFIER_SITE_DIR}:/app/lib"


def test_the_agent_gets_neither():
    env = sandbox_env(home="/h", tmpdir="/t", path=PATH, extra={"PYTHONPATH": "src"})
    assert env["PYTHONPATH"] == "src"
    assert "PYTHONPYCACHEPREFIX" not in env
