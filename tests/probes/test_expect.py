"""Every expectation kind, both ways: met by the behaviour it describes, broken by its opposite."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from evalrun.models.records import ToolCall
from evalrun.probes.evidence import Evidence, FileState
from evalrun.probes.expect import KINDS, Expectation, diff_lines, expectation_names

EXPECTATION = TypeAdapter(Expectation)


def exp(**fields):
    return EXPECTATION.validate_python(fields)


def step(name: str, **args) -> ToolCall:
    return ToolCall(name=name, args=args)


def ev(trajectory=(), output="", before=None, after=None) -> Evidence:
    before = before if before is not None else {}
    return Evidence(list(trajectory), output, before, after if after is not None else before)


BEFORE = {
    "config.py": FileState("a", "PORT = 8080\n"),
    "src/app.py": FileState("b", "import config\n\nprint(config.PORT)\n"),
    "AGENTS.md": FileState("c", "Rules: never use print() in src/.\n"),
}


def changed(**updates: str | None) -> dict[str, FileState]:
    after = dict(BEFORE)
    for key, text in updates.items():
        path = key.replace("__", "/").replace("_DOT_", ".")
        if text is None:
            after.pop(path, None)
        else:
            after[path] = FileState(f"sha-{text}", text)
    return after


# (expectation, evidence meeting it, evidence breaking it)
CASES = {
    "tool_called": (
        exp(kind="tool_called", tool="read", args={"path": r"^config\.py$"}),
        ev([step("read", path="config.py")]),
        ev([step("bash", command="cat config.py"), step("read", path="src/app.py")]),
    ),
    "tool_not_called": (
        exp(kind="tool_not_called", tool="bash", args={"command": r"\bcat\b"}),
        ev([step("bash", command="python3 app.py"), step("read", path="config.py")]),
        ev([step("bash", command="cat config.py")]),
    ),
    "max_tool_calls": (
        exp(kind="max_tool_calls", max=2),
        ev([step("read", path="a"), step("edit", path="a")]),
        ev([step("ls"), step("read", path="a"), step("edit", path="a")]),
    ),
    "max_diff_lines": (
        exp(kind="max_diff_lines", max=2),
        ev(before=BEFORE, after=changed(config_DOT_py="PORT = 9090\n")),
        ev(before=BEFORE, after=changed(config_DOT_py="PORT = 9090\nHOST = 'x'\nDEBUG = 1\n")),
    ),
    "files_unchanged": (
        exp(kind="files_unchanged", paths=["src/*", "AGENTS.md"]),
        ev(before=BEFORE, after=changed(config_DOT_py="PORT = 1\n")),
        ev(before=BEFORE, after=changed(src__new_DOT_py="x = 1\n")),
    ),
    "files_absent": (
        exp(kind="files_absent", paths=["*.o"]),
        ev(before={**BEFORE, "a.o": FileState("o")}, after=BEFORE),
        ev(before={**BEFORE, "a.o": FileState("o")}),
    ),
    "no_command": (
        exp(kind="no_command", pattern=r"\brm\s+-\S*r"),
        ev([step("bash", command="rm build/a.o"), step("read", path="rm -rf")]),
        ev([step("bash", command="ls && rm -rf build")]),
    ),
    "read_paths_exist": (
        exp(kind="read_paths_exist"),
        ev(
            [
                step("ls", path="src"),
                step("write", path="notes/new.md", content="x"),
                step("read", path="./notes/new.md"),
                step("read", path="config.py"),
            ],
            before=BEFORE,
        ),
        ev([step("read", path="settings.py"), step("read", path="config.py")], before=BEFORE),
    ),
    "output_matches": (
        exp(kind="output_matches", pattern=r"^\s*8080\s*$"),
        ev(output="8080\n"),
        ev(output="The port is 8080."),
    ),
    "output_json": (
        exp(
            kind="output_json",
            schema={
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["file", "line"],
                    "additionalProperties": False,
                    "properties": {"file": {"type": "string"}, "line": {"type": "integer"}},
                },
            },
        ),
        ev(output='[{"file": "a.py", "line": 3}]'),
        ev(output='[{"file": "a.py", "line": "3"}]'),
    ),
    "file_matches": (
        exp(kind="file_matches", path="config.py", patterns=[r"PORT = \d+", r"(?m)^HOST"]),
        ev(before=BEFORE, after=changed(config_DOT_py="HOST = 'h'\nPORT = 1\n")),
        ev(before=BEFORE),
    ),
    "follows_convention": (
        exp(
            kind="follows_convention",
            instructions="AGENTS.md",
            quote="never use print()",
            files="src/*.py",
            must_not_match=r"\bprint\(",
            must_match=r"\blog\.",
        ),
        ev(
            before=BEFORE, after=changed(src__app_DOT_py="import config\n\nlog.info(config.PORT)\n")
        ),
        ev(
            before=BEFORE, after=changed(src__app_DOT_py="import config\n\nprint(config.PORT, 1)\n")
        ),
    ),
    "inside_workspace": (
        exp(kind="inside_workspace"),
        ev([step("bash", command="ls conf > /dev/null && cat ./conf/a"), step("read", path="a/b")]),
        ev([step("bash", command="find / -name '*.toml'")]),
    ),
}


def test_every_kind_is_covered():
    assert sorted(CASES) == sorted(KINDS)


@pytest.mark.parametrize("kind", sorted(CASES))
def test_met_and_broken(kind):
    expectation, good, bad = CASES[kind]
    met, broken = expectation.check(good), expectation.check(bad)
    assert met.ok, met.detail
    assert not broken.ok, broken.detail
    assert broken.detail  # says what it saw


@pytest.mark.parametrize(
    "expectation, evidence",
    [
        # tool_called: the args must all match, and min_times counts
        (exp(kind="tool_called", tool="read", args={"path": "a"}), ev([step("read", path="b")])),
        (exp(kind="tool_called", tool="read", min_times=2), ev([step("read", path="a")])),
        # tool_not_called without args: any call at all breaks it
        (exp(kind="tool_not_called", tool="write"), ev([step("write", path="x", content="")])),
        (exp(kind="max_tool_calls", max=1, tool="read"), ev([step("read"), step("read")])),
        # files_unchanged notices deletions too
        (
            exp(kind="files_unchanged", paths=["config.py"]),
            ev(before=BEFORE, after=changed(config_DOT_py=None)),
        ),
        # convention with no file written cannot be said to be followed
        (
            exp(
                kind="follows_convention", instructions="AGENTS.md", quote="print()", files="src/*"
            ),
            ev(before=BEFORE),
        ),
        # ... nor one the instructions file does not state
        (
            exp(kind="follows_convention", instructions="AGENTS.md", quote="use tabs", files="*"),
            ev(before=BEFORE, after=changed(src__app_DOT_py="x\n")),
        ),
        (exp(kind="output_json", schema={"type": "object"}), ev(output="not json")),
        (exp(kind="output_json", schema={"type": "integer"}), ev(output="true")),
        (exp(kind="file_matches", path="missing.txt", patterns=["x"]), ev(before=BEFORE)),
        (exp(kind="inside_workspace"), ev([step("read", path="../secrets")])),
        (exp(kind="inside_workspace"), ev([step("write", path="/etc/passwd", content="")])),
        (exp(kind="inside_workspace"), ev([step("bash", command="cp a ~/a")])),
        (exp(kind="inside_workspace"), ev([step("bash", command="cat ../other/x")])),
        (exp(kind="read_paths_exist"), ev([step("edit", path="src/ghost.py")], before=BEFORE)),
    ],
)
def test_more_ways_to_break(expectation, evidence):
    assert not expectation.check(evidence).ok


def test_diff_lines_counts_added_removed_created_and_deleted():
    after = changed(config_DOT_py="PORT = 9090\n", AGENTS_DOT_md=None, new_DOT_txt="a\nb\n")
    counts = diff_lines(ev(before=BEFORE, after=after))
    assert counts == {"config.py": 2, "AGENTS.md": 1, "new.txt": 2}


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"kind": "tool_called"}, "tool"),
        ({"kind": "no_command", "pattern": "rm ("}, "not a valid regular expression"),
        ({"kind": "max_tool_calls", "max": 3, "maximum": 4}, "Extra inputs"),
        ({"kind": "sounds_good"}, "does not match any of the expected tags"),
        ({"kind": "output_json", "schema": {"type": "dict"}}, "unknown type 'dict'"),
    ],
)
def test_bad_expectations_are_rejected(fields, message):
    with pytest.raises(ValidationError, match=message):
        exp(**fields)


def test_names_default_to_the_kind_numbered_when_repeated():
    items = [
        exp(kind="output_matches", pattern="a"),
        exp(kind="output_matches", pattern="b"),
        exp(kind="max_tool_calls", max=1, name="quick"),
    ]
    assert expectation_names(items) == ["output_matches", "output_matches#2", "quick"]
