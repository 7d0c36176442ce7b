"""`inject`: the hidden folder lands where nothing of the agent's is - nor anything python would
import in place of one of its modules."""

from __future__ import annotations

import asyncio
from pathlib import Path

from evalrun.sandbox.local import LocalBackend
from evalrun.tasks.base import inject, shadowing
from tests.conftest import REPO


def hidden_folder(tmp_path: Path) -> Path:
    hidden = tmp_path / "hidden"
    (hidden / "tests").mkdir(parents=True)
    (hidden / "tests" / "test_x.py").write_text("")
    (hidden / "check.py").write_text("print('the real check')\n")
    (hidden / "verify.sh").write_text("python3 -c 'import check'\n")
    return hidden


PLANTED = [
    "check/__init__.py",  # a package beats a module in the same folder
    "check.abi3.so",
    "check.cpython-311-x86_64-linux-gnu.so",
    "__pycache__/check.cpython-311.pyc",
    "tests.py",  # a module beats a namespace package
]


def test_what_would_shadow_a_hidden_module_is_cleared_first(tmp_path: Path):
    async def scenario() -> tuple[list[str], str]:
        async with LocalBackend().open("inject") as box:
            for rel in [*PLANTED, "calc.py", "notes/keep.txt"]:
                await box.write_file(rel, "print('PLANTED')\n")
            await box.end_agent()
            await inject(box, hidden_folder(tmp_path))
            left = sorted(
                p.relative_to(box.workdir).as_posix() for p in Path(box.workdir).rglob("*")
            )
            ran = await box.exec(["bash", "verify.sh"])
            return left, ran.stdout

    left, out = asyncio.run(scenario())
    assert left == [
        "calc.py",
        "check.py",
        "notes",
        "notes/keep.txt",
        "tests",
        "tests/test_x.py",
        "verify.sh",
    ]
    assert out.strip() == "the real check"


def test_only_the_roots_neighbours_are_named(tmp_path: Path):
    named = shadowing(hidden_folder(tmp_path))
    assert {"check", "check.so", "check.abi3.so", "tests.py", "__pycache__"} <= set(named)
    assert "check.cpython-312-aarch64-linux-gnu.so" in named
    assert not any(n.startswith(("verify", "tests/")) for n in named)


def test_the_scaffolded_verifiers_say_how_the_reason_is_chosen_as_it_is_chosen():
    """`evalrun new` / `evalrun init` templates tell authors which line becomes the reason."""
    from evalrun.tasks.base import failure_reason

    output = "checking...\nFAIL: expected 42, got 41\ncleaning up\n"
    assert failure_reason(output, 1, "verify.sh") == "FAIL: expected 42, got 41"
    assert failure_reason("checking...\nno answer.txt\n", 1, "verify.sh") == "no answer.txt"
    templates = REPO / "evalrun" / "cli" / "scaffold" / "templates"
    for script in templates.rglob("verify.sh"):
        comment = " ".join(line.lstrip("# ") for line in script.read_text().splitlines()[:6])
        assert "first line starting with FAIL (else the last line" in comment, script
