"""One conformance suite for every sandbox backend (see conftest.BACKEND_FACTORIES).

Each check is what an agent or the grader relies on: commands report exit code and output, cwd
and env are honoured but the host environment is not, a timeout ends the whole process tree,
files cross the boundary byte for byte, setup.sh runs and verify sees the agent's work, samples
never see each other, and closing leaves nothing behind.

A backend that cannot meet a check is listed in KNOWN_LIMITATIONS with the reason: that check is
a strict xfail for it (it must keep failing, so a fix is noticed), never a silent skip.
"""

from __future__ import annotations

import asyncio
import posixpath
import random
import secrets
import stat
import textwrap
from pathlib import Path

import pytest

from evalrun.agents.noop import NoopAgent
from evalrun.agents.oracle import OracleAgent
from evalrun.models.records import Outcome
from evalrun.run.engine import run_sample
from evalrun.run.trial import Limits
from evalrun.sandbox.base import Sandbox, SandboxBackend
from evalrun.tasks.loader import load_task
from tests.sandbox.conftest import BackendSpec

KNOWN_LIMITATIONS: dict[tuple[str, str], str] = {
    ("local", "test_detached_children_die_with_the_command_on_timeout"): (
        "local kills the command's process group; a child that starts its own session (setsid) "
        "escapes it. Isolated backends end the whole pid namespace / container exec."
    ),
    ("local", "test_two_sandboxes_never_see_each_others_files"): (
        "local is not isolated: every sample can read and write every host path, including the "
        "other sample's workspace."
    ),
    ("local", "test_the_agent_cannot_write_the_private_folder"): (
        "local is not isolated: the private folder is a host folder of the same user."
    ),
    ("modal", "test_the_agent_cannot_write_the_private_folder"): (
        "commands run as root in a Modal sandbox (Modal's default): nothing is out of its reach."
    ),
}

LIMITS = Limits(setup_s=60, agent_s=60, verify_s=60, max_retries=0, retry_backoff_s=0.01)
BIG = random.Random(5).randbytes(3 * 1024 * 1024 + 17)
FILES: dict[str, bytes] = {
    "binary.bin": bytes(range(256)) * 4 + b"\x00\r\n\xff",
    "données/ünï-文件 name.txt": "héllo wörld ✓\n".encode(),
    "empty.txt": b"",
    "deep/er/big.bin": BIG,
}


@pytest.fixture(autouse=True)
def _known_limitations(request: pytest.FixtureRequest, backend_id: str) -> None:
    reason = KNOWN_LIMITATIONS.get((backend_id, request.node.originalname))
    if reason:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))


def run(coro):
    return asyncio.run(coro)


def test_exec_reports_exit_code_stdout_and_stderr(backend: SandboxBackend):
    async def body():
        async with backend.open("exec") as box:
            shell = await box.exec("echo out; echo err >&2; exit 3")
            argv = await box.exec(["python3", "-c", "import sys; print(sys.argv[1])", "a  b"])
            missing = await box.exec(["no-such-command-evalrun"])
        return shell, argv, missing

    shell, argv, missing = run(body())
    assert (shell.exit_code, shell.stdout, shell.stderr) == (3, "out\n", "err\n")
    assert not shell.timed_out and not shell.ok
    assert argv.ok and argv.stdout == "a  b\n"
    assert missing.exit_code not in (0, None)


def test_cwd_and_env_are_honoured(backend: SandboxBackend):
    async def body():
        async with backend.open("cwd") as box:
            await box.exec("mkdir -p sub/dir")
            default = await box.exec("pwd")
            relative = await box.exec("pwd", cwd="sub/dir")
            absolute = await box.exec("pwd", cwd=posixpath.join(box.workdir, "sub"))
            env = await box.exec('printf %s "$EVALRUN_PROBE"', env={"EVALRUN_PROBE": "a b=c"})
            return box.workdir, default, relative, absolute, env

    workdir, default, relative, absolute, env = run(body())
    assert default.stdout.strip() == workdir
    assert relative.stdout.strip() == posixpath.join(workdir, "sub/dir")
    assert absolute.stdout.strip() == posixpath.join(workdir, "sub")
    assert env.stdout == "a b=c"


def test_environment_is_an_allow_list(backend: SandboxBackend, monkeypatch):
    probe = f"xyz-{secrets.token_hex(8)}"
    monkeypatch.setenv("EVALRUN_SECRET_PROBE", probe)
    monkeypatch.setenv("OPENAI_API_KEY", f"sk-{probe}")

    async def body():
        async with backend.open("env") as box:
            return await box.exec("env")

    seen = run(body())
    assert seen.ok
    assert probe not in seen.stdout
    names = {line.split("=", 1)[0] for line in seen.stdout.splitlines() if "=" in line}
    assert {"PATH", "HOME", "TMPDIR"} <= names
    assert "EVALRUN_SECRET_PROBE" not in names and "OPENAI_API_KEY" not in names


async def _heartbeat_stops(box: Sandbox, beat: str) -> bool:
    """True when the heartbeat file stops changing (the process writing it is gone)."""
    before = await box.read_file(beat)
    await asyncio.sleep(0.6)
    return before == await box.read_file(beat) and len(before) > 0


def test_timeout_kills_the_process_tree(
    backend: SandboxBackend, spec: BackendSpec, stray_processes
):
    marker = f"evalrun-tree-{secrets.token_hex(6)}"
    script = (
        f"(while :; do echo {marker} >> beat; sleep 0.05; done) & "
        f"bash -c 'sleep 300; : {marker}' & sleep 300"
    )

    async def body():
        async with backend.open("timeout") as box:
            result = await box.exec(script, timeout_s=1.0)
            stopped = await _heartbeat_stops(box, "beat")
            after = await box.exec("echo still-usable")
            return result, stopped, after

    result, stopped, after = run(body())
    assert result.timed_out and result.exit_code is None
    assert stopped, "a background child kept running after the timeout"
    assert after.stdout == "still-usable\n"
    if spec.host_processes:
        assert stray_processes(marker) == []


def test_detached_children_die_with_the_command_on_timeout(
    backend: SandboxBackend, spec: BackendSpec, stray_processes
):
    marker = f"evalrun-setsid-{secrets.token_hex(6)}"
    script = f"setsid bash -c 'while :; do echo {marker} >> beat; sleep 0.05; done' & sleep 300"

    async def body():
        async with backend.open("setsid") as box:
            result = await box.exec(script, timeout_s=1.0)
            return result, await _heartbeat_stops(box, "beat")

    result, stopped = run(body())
    assert result.timed_out
    assert stopped, "a child in its own session kept running after the timeout"
    if spec.host_processes:
        assert stray_processes(marker) == []


def test_files_round_trip_byte_for_byte(backend: SandboxBackend):
    async def body():
        async with backend.open("files") as box:
            for rel, data in FILES.items():
                await box.write_file(rel, data)
            await box.write_file(posixpath.join(box.workdir, "abs.txt"), "ünïcode str ✓")
            await box.write_file("empty.txt", b"")  # replacing a file works too
            back = {rel: await box.read_file(rel) for rel in FILES}
            absolute = await box.read_file("abs.txt")
            sums = await box.exec(["sha256sum", "--", *FILES])
            with pytest.raises(FileNotFoundError):
                await box.read_file("does/not/exist.txt")
            return back, absolute, sums

    back, absolute, sums = run(body())
    assert back == FILES
    assert absolute == "ünïcode str ✓".encode()
    assert sums.ok, sums.stderr
    assert sums.stdout == _sha256sum_lines(FILES)


def _sha256sum_lines(files: dict[str, bytes]) -> str:
    import hashlib

    return "".join(f"{hashlib.sha256(data).hexdigest()}  {rel}\n" for rel, data in files.items())


def _write_tree(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def test_put_copies_a_folder_tree_with_modes(backend: SandboxBackend, tmp_path: Path):
    tree = tmp_path / "tree"
    _write_tree(tree, {**FILES, "bin/run.sh": b"#!/bin/sh\necho ran $1\n"})
    (tree / "bin/run.sh").chmod(0o755)
    (tree / "empty-dir").mkdir()
    update = tmp_path / "update"
    _write_tree(update, {"binary.bin": b"replaced", "new.txt": b"new"})

    async def body():
        async with backend.open("put") as box:
            await box.put(tree, ".")
            await box.put(tree, "nested/copy")
            ran = await box.exec("./bin/run.sh here && test -x nested/copy/bin/run.sh")
            plain = await box.exec("test ! -x binary.bin && test -d empty-dir")
            back = {rel: await box.read_file(f"nested/copy/{rel}") for rel in FILES}
            await box.put(update, ".")
            replaced = await box.read_file("binary.bin")
            kept = await box.read_file("données/ünï-文件 name.txt")
            return ran, plain, back, replaced, kept

    ran, plain, back, replaced, kept = run(body())
    assert ran.ok and ran.stdout == "ran here\n", ran.stderr
    assert plain.ok, "modes or empty folders were not copied"
    assert back == FILES
    assert replaced == b"replaced" and kept == FILES["données/ünï-文件 name.txt"]
    assert stat.S_IMODE((tree / "bin/run.sh").stat().st_mode) == 0o755  # the source is untouched


def _setup_task(make_task) -> Path:
    return make_task(
        "001-setup-and-verify",
        files={
            "setup/setup.sh": "echo seeded > seed.txt\n",
            "solution/solve.sh": "echo 42 > answer.txt; echo 'final answer: 42'\n",
            "solution/answer.txt": "",
            "verify/verify.sh": textwrap.dedent(
                """\
                set -u
                [ -f seed.txt ] || { echo "FAIL: setup.sh did not run"; exit 1; }
                [ ! -e setup.sh ] || { echo "FAIL: setup.sh was left behind"; exit 1; }
                grep -q 'final answer: 42' "$EVALRUN_ANSWER_FILE" \\
                  || { echo "FAIL: the agent's final answer is missing"; exit 1; }
                [ "$(cat answer.txt 2>/dev/null)" = 42 ] \\
                  || { echo "FAIL: answer.txt does not contain 42"; exit 1; }
                echo PASS
                """
            ),
        },
    )


def test_setup_runs_and_verify_sees_the_agents_changes(backend: SandboxBackend, make_task):
    task = load_task(_setup_task(make_task))

    async def body():
        gold = await run_sample(task, 0, OracleAgent(), backend, LIMITS, run_id="conformance")
        idle = await run_sample(task, 1, NoopAgent(), backend, LIMITS, run_id="conformance")
        return gold, idle

    gold, idle = run(body())
    assert gold.outcome is Outcome.passed, (gold.reason, gold.verify_output)
    assert idle.outcome is Outcome.failed
    assert idle.reason == "FAIL: the agent's final answer is missing"


def test_two_sandboxes_never_see_each_others_files(backend: SandboxBackend):
    token = secrets.token_hex(8)

    async def body():
        async with backend.open("a") as a, backend.open("b") as b:
            await a.write_file("secret.txt", token)
            await a.end_agent()  # the harness's own file: written once the agent phase is over
            await a.write_file(posixpath.join(a.private_dir, "answer.txt"), token)
            a_secret = posixpath.join(a.workdir, "secret.txt")
            a_answer = posixpath.join(a.private_dir, "answer.txt")
            peek = await b.exec(f"cat {a_secret} {a_answer}; grep -rs {token} . || true")
            await b.exec(f"echo intruder > {posixpath.join(a.workdir, 'intruder.txt')}")
            intruded = await a.exec("test -e intruder.txt")
            return peek, intruded

    peek, intruded = run(body())
    assert token not in peek.stdout
    assert not intruded.ok, "sandbox b wrote into sandbox a's workspace"


def test_close_leaves_nothing_behind(backend: SandboxBackend, spec: BackendSpec):
    async def body():
        async with backend.open("cleanup") as box:
            await box.write_file("big.bin", BIG)
            made = await box.exec(
                "mkdir -p locked/inner && touch locked/inner/f && chmod 000 locked/inner locked"
                ' && touch "$HOME/h" "$TMPDIR/t"'
            )
            await box.end_agent()
            await box.write_file(posixpath.join(box.private_dir, "answer.txt"), "x")
            await box.exec('touch "$HOME/h" "$TMPDIR/t"')
        return box, made

    box, made = run(body())
    assert made.ok, made.stderr
    assert spec.leftovers(box) == []


class PlantingAgent:
    """Plants what would break the copy-in of verify/: a folder where verify.sh goes, a file where
    a verify/ folder goes, a read-only file where a helper goes. Its fail must stay a fail."""

    name = "planting"

    def preflight(self) -> None:
        return None

    async def run(self, task, sandbox: Sandbox):
        from evalrun.models.records import AgentResult

        await sandbox.exec(
            "mkdir -p verify.sh/deep && echo x > verify.sh/deep/f && echo x > checks"
            " && echo old > data.txt && chmod 444 data.txt"
        )
        return AgentResult(output="planted")


def test_a_planted_path_cannot_turn_a_fail_into_an_error(backend: SandboxBackend, make_task):
    task = load_task(
        make_task(
            files={
                "verify/checks/extra.sh": "exit 0\n",
                "verify/data.txt": "expected\n",
            }
        )
    )
    rec = asyncio.run(run_sample(task, 0, PlantingAgent(), backend, LIMITS, run_id="conformance"))
    assert rec.outcome is Outcome.failed, rec.reason
    assert "answer.txt does not contain 42" in rec.reason


def test_the_agent_cannot_write_the_private_folder(backend: SandboxBackend):
    async def body():
        async with backend.open("private") as box:
            answer = posixpath.join(box.private_dir, "answer.txt")
            shell = await box.exec(
                f"mkdir -p {answer}/x; echo planted > {box.private_dir}/p; chmod 500 "
                f"{box.private_dir}; ls -A {box.private_dir}"
            )
            try:
                await box.write_file(answer, "planted")
                tool = "written"
            except OSError as exc:
                tool = str(exc)
            await box.end_agent()
            await box.write_file(answer, "the harness's")
            return shell, tool, await box.read_file(answer)

    shell, tool, answer = run(body())
    assert "planted" not in shell.stdout and "answer.txt" not in shell.stdout, shell.stdout
    assert tool != "written"
    assert answer == b"the harness's"


def test_end_agent_kills_what_the_agent_left_running(
    backend: SandboxBackend, spec: BackendSpec, stray_processes
):
    marker = f"evalrun-survivor-{secrets.token_hex(6)}"
    daemon = f"while :; do date +%N >> beat; sleep 0.05; done; : {marker}"

    async def body():
        async with backend.open("survivor") as box:
            started = await box.exec(
                f"setsid bash -c '{daemon}' >/dev/null 2>&1 & disown; sleep 0.3"
            )
            running = asyncio.ensure_future(box.exec(f"sleep 300; : {marker}"))
            await asyncio.sleep(0.5)
            await box.end_agent()
            stopped = await _heartbeat_stops(box, "beat")
            await asyncio.wait_for(running, 30)
            return started, stopped

    started, stopped = run(body())
    assert started.ok, started.stderr
    assert stopped, "a detached process of the agent kept running after end_agent"
    if spec.host_processes:
        assert stray_processes(marker) == []


def test_the_verifier_gets_a_fresh_home_and_no_user_site(backend: SandboxBackend):
    plant = (
        'site=$(python3 -c "import site; print(site.getusersitepackages())") && mkdir -p "$site"'
        ' && echo "print(\'USERCUSTOMIZE RAN\')" > "$site/usercustomize.py"'
        ' && echo agent > "$HOME/.marker" && echo agent > "$TMPDIR/marker"'
        " && python3 -c pass"
    )
    check = (
        'python3 -c pass; ls -A "$HOME" "$TMPDIR"; echo "path=$PATH nousersite=$PYTHONNOUSERSITE"'
    )

    async def body():
        async with backend.open("fresh") as box:
            planted = await box.exec(plant)
            await box.end_agent()
            verifier = await box.exec(check, env={"HOME": "/", "PATH": "/tmp"})
            await box.begin_agent()  # a multi-step task's next turn: the agent's own HOME again
            return planted, verifier, await box.exec('cat "$HOME/.marker"')

    planted, verifier, next_turn = run(body())
    assert next_turn.stdout == "agent\n", next_turn.stderr
    assert "USERCUSTOMIZE RAN" in planted.stdout, planted.stdout + planted.stderr
    assert verifier.ok, verifier.stderr
    assert "USERCUSTOMIZE RAN" not in verifier.stdout
    assert "marker" not in verifier.stdout
    assert "nousersite=1" in verifier.stdout and "path=/tmp " not in verifier.stdout
