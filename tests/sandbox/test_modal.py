"""The modal backend beyond the shared conformance suite.

Modal's cloud cannot be reached from here: everything below that runs a sandbox runs against the
stand-in in `tests/sandbox/modal_standin.py`, never against Modal. What ties the stand-in to the
real SDK is `test_the_standin_matches_the_real_sdk_surface`, which checks every name and keyword
the backend uses against the installed `modal` package.
"""

from __future__ import annotations

import asyncio
import inspect
import socket
import subprocess
import sys

import pytest

from evalrun.cli.hydra import compose_config
from evalrun.cli.main import main
from evalrun.errors import SandboxUnavailable, UsageError
from evalrun.honesty.check import honesty_challenges, tamper_challenges
from evalrun.honesty.tamper import DEFENDERS
from evalrun.run.plan import build
from evalrun.sandbox import modal as modal_backend
from evalrun.sandbox.common.owner import current_owner, start_time
from evalrun.sandbox.modal import ModalBackend, owner_tags
from evalrun.tasks.loader import load_task
from tests.conftest import require_engine
from tests.sandbox import modal_standin
from tests.sandbox.modal_standin import StandinState, install_modal_standin


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> StandinState:
    require_engine(modal_standin.available(), "the Modal stand-in (bwrap, nsenter, root)")
    return install_modal_standin(monkeypatch)


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.delenv("MODAL_TOKEN_ID", raising=False)
    monkeypatch.delenv("MODAL_TOKEN_SECRET", raising=False)
    monkeypatch.setenv("MODAL_CONFIG_PATH", str(tmp_path / "absent.toml"))


def test_missing_credentials_stop_the_run_before_it_starts(no_credentials):
    with pytest.raises(SandboxUnavailable) as caught:
        ModalBackend().preflight()
    assert "MODAL_TOKEN_ID" in str(caught.value) and "MODAL_TOKEN_SECRET" in str(caught.value)
    assert caught.value.exit_code == 2


def test_a_modal_toml_counts_as_credentials(standin, no_credentials, monkeypatch, tmp_path):
    """(Past the credentials, preflight lists sandboxes: here the stand-in answers.)"""
    config = tmp_path / "modal.toml"
    config.write_text('[default]\ntoken_id = "ak-x"\ntoken_secret = "as-x"\n')
    monkeypatch.setenv("MODAL_CONFIG_PATH", str(config))
    ModalBackend().preflight()


def test_missing_sdk_says_which_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "modal", None)
    with pytest.raises(SandboxUnavailable, match=r"pip install 'evalrun\[modal\]'"):
        ModalBackend().preflight()


def test_sandbox_modal_composes_and_typos_fail(make_task):
    cfg = compose_config(["sandbox=modal", f"tasks_dir={make_task().parent}"])
    backend = build(cfg).backend
    assert isinstance(backend, ModalBackend)
    assert backend.block_network is True and backend.apt_packages == ("git", "sqlite3")
    with pytest.raises(UsageError, match="block_networks"):
        compose_config(["sandbox=modal", "sandbox.block_networks=false"])


def test_the_standin_matches_the_real_sdk_surface():
    """Every call the backend makes exists in the installed modal SDK with these keywords."""
    modal = pytest.importorskip("modal", reason="the modal SDK is an optional extra")
    from modal.container_process import _ContainerProcess
    from modal.sandbox._filesystem import _SandboxFilesystem
    from modal.sandbox._sandbox import _Sandbox

    def params(fn) -> set[str]:
        return set(inspect.signature(fn).parameters)

    create_keywords = {"app", "image", "timeout", "block_network", "workdir", "cpu", "memory"}
    assert create_keywords | {"tags"} <= params(_Sandbox.create)
    assert {"text", "timeout"} <= params(_Sandbox.exec)
    assert {"app_id", "tags"} <= params(_Sandbox.list)  # the orphan sweep
    assert hasattr(_Sandbox, "get_tags") and isinstance(modal.app._App.app_id, property)
    assert {"create_if_missing"} <= params(modal.app._App.lookup)
    assert {"python_version"} <= params(modal.image._Image.debian_slim)
    for name in ("read_bytes", "write_bytes"):
        assert hasattr(_SandboxFilesystem, name)
    write_order = list(inspect.signature(_SandboxFilesystem.write_bytes).parameters)
    assert write_order[1:3] == ["data", "remote_path"]  # positional, as the backend calls it
    for name in ("wait", "returncode", "stdout", "stderr", "stdin"):
        assert hasattr(_ContainerProcess, name)
    from modal.io_streams import StreamWriter

    for name in ("write", "write_eof", "drain"):  # put streams a tar into `tar -x`'s stdin
        assert hasattr(StreamWriter, name) and hasattr(modal_standin._StreamWriter, name)
    for obj in (
        modal.Sandbox.create,
        modal.App.lookup,
        modal.Sandbox.exec,
        modal.Sandbox.terminate,
        modal.Sandbox.list,
        modal.Sandbox.get_tags,
    ):
        assert callable(obj.aio)
    assert callable(modal.Image.debian_slim) and callable(modal.Image.from_registry)
    for name in ("Error", "SandboxFilesystemNotFoundError", "SandboxFilesystemIsADirectoryError"):
        assert issubclass(getattr(modal.exception, name), Exception)
        assert hasattr(modal_standin, name)


def test_sandbox_is_made_as_configured_and_blocks_the_network(standin: StandinState):
    backend = ModalBackend(timeout_s=900, cpu=2.0, memory_mb=1024)
    probe = "import socket; socket.create_connection(('1.1.1.1', 80), timeout=3)"

    async def body():
        async with backend.open("net") as box:
            return await box.exec(["python3", "-c", probe])

    result = asyncio.run(body())
    assert not result.ok and "Network is unreachable" in result.stderr
    (sandbox,) = standin.sandboxes
    assert sandbox.spec["block_network"] is True
    assert (sandbox.spec["timeout"], sandbox.spec["cpu"], sandbox.spec["memory"]) == (
        900,
        2.0,
        1024,
    )
    assert sandbox.spec["app"] == "evalrun" and sandbox.spec["workdir"] == "/workspace"
    assert sandbox.spec["image"].recipe == (
        "debian_slim(python_version=3.11)",
        "apt_install('git', 'sqlite3')",
    )


def test_a_registry_image_and_an_open_network_are_passed_through(standin: StandinState):
    backend = ModalBackend(image="python:3.11-slim", block_network=False)

    async def body():
        async with backend.open("open") as box:
            return await box.exec("true")

    assert asyncio.run(body()).ok
    (sandbox,) = standin.sandboxes
    assert sandbox.spec["block_network"] is False
    assert sandbox.spec["image"].recipe == ("from_registry(python:3.11-slim)",)


def test_sandbox_is_terminated_when_the_sample_is_cancelled(standin: StandinState):
    backend = ModalBackend()

    async def body():
        started = asyncio.Event()

        async def sample():
            async with backend.open("cancel") as box:
                started.set()
                await box.exec("sleep 300")

        task = asyncio.ensure_future(sample())
        await started.wait()
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(body())
    (sandbox,) = standin.sandboxes
    assert not sandbox.root.exists()
    assert sandbox._init.returncode is not None


def test_evalrun_check_on_modal_as_a_user_types_it(standin: StandinState, make_task, capsys):
    suite = make_task("001-answer").parent
    with pytest.raises(SystemExit) as exited:
        main(["check", "sandbox=modal", f"tasks_dir={suite}"])
    out = capsys.readouterr().out
    assert exited.value.code == 0, out
    assert "sandbox=modal" in out and "all 1 verifiers honest" in out
    # gold, untouched, wrong/off-by-one and every reward hack (modal is isolated: all of them)
    task = load_task(suite / "001-answer")  # no Python in its workspace: those hacks are skipped
    challenges = honesty_challenges(task) + tamper_challenges(task, True, False, DEFENDERS)
    assert len(standin.sandboxes) == len(challenges)
    assert all(not s.root.exists() for s in standin.sandboxes)


def test_owner_tags_are_tags_modal_accepts():
    pytest.importorskip("modal", reason="the modal SDK is an optional extra")
    from modal._utils.name_utils import check_tag_dict  # the SDK's own rule, before any request

    check_tag_dict(owner_tags(current_owner(), keep=True))
    check_tag_dict(owner_tags(f"{'h.' * 40}:{2**22}:?"))  # a long host, an unknown start time


def dead_owner() -> str:
    """The owner token of an evalrun process that was killed (a real process, now gone)."""
    proc = subprocess.Popen(["sleep", "60"])
    token = f"{socket.gethostname()}:{proc.pid}:{start_time(proc.pid)}"
    proc.kill()
    proc.wait()
    return token


def test_preflight_terminates_a_killed_runs_sandboxes_and_leaves_the_rest(
    standin: StandinState, monkeypatch: pytest.MonkeyPatch
):
    """A killed run's sandbox is made by the backend as usual, under the owner token of a process
    that is gone, and left open; the next run's preflight (on a loop and thread of its own, as
    another Modal client would be) terminates it, and only it: a live run's, a kept one and
    another host's stay."""
    dead = dead_owner()
    other_host = f"elsewhere:{dead.split(':', 1)[1]}"

    left_open = []  # held: a context manager collected would close its sandbox

    async def leave_open(owner: str, label: str, **conf) -> None:
        with monkeypatch.context() as patch:
            patch.setattr(modal_backend, "current_owner", lambda: owner)
            left_open.append(ModalBackend(**conf).open(label))
            await left_open[-1].__aenter__()  # never closed: its run died

    async def body():
        await leave_open(dead, "orphan")
        await leave_open(dead, "kept", keep_workspaces=True)
        await leave_open(other_host, "foreign")
        async with ModalBackend().open("live") as live:
            await asyncio.to_thread(ModalBackend().preflight)  # the next run, meanwhile
            after_preflight = [s.running for s in standin.sandboxes]
            still = await live.exec("echo still here")
            await leave_open(dead, "another orphan")
            removed = await asyncio.to_thread(ModalBackend().remove_orphans)
        return after_preflight, still, removed

    try:
        after_preflight, still, removed = asyncio.run(body())
    finally:
        for sandbox in standin.sandboxes:
            asyncio.run(sandbox.terminate.aio())
    assert after_preflight == [False, True, True, True]  # orphan, kept, foreign, live
    assert still.ok and still.stdout == "still here\n"
    assert removed == 1  # the other orphan; the rest untouched again
    tags = [s.spec["tags"] for s in standin.sandboxes]
    assert tags[3] == owner_tags(current_owner()) and tags[1]["evalrun.keep"] == "1"


def test_a_second_ctrl_c_terminates_the_open_sandboxes(standin: StandinState):
    backend = ModalBackend()

    async def body():
        async with backend.open("one"), backend.open("two"):
            backend.abandon()  # as `exit_now` calls it: synchronously, inside the run's loop
            return [s.running for s in standin.sandboxes]

    assert asyncio.run(body()) == [False, False]
    assert all(not s.root.exists() for s in standin.sandboxes)
