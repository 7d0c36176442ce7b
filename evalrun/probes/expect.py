"""Declarative expectations: what a probe checks on the trajectory, the workspace and the output.

Each kind is a small pydantic model (unknown keys rejected) with `check(evidence) -> Check`.
In probe.yaml every expectation has a `kind` and an optional `name` (default: the kind, numbered
when a kind repeats); the name is what reports and `scores["expect:<name>"]` show.

```
tool_called         tool, args {arg: regex}, min_times=1   a call of `tool` whose args all match
tool_not_called     tool, args {arg: regex}                no such call (no args: no call at all)
max_tool_calls      max, tool=None                         at most `max` calls (of `tool` or any)
max_diff_lines      max                                    lines added + removed, whole workspace
files_unchanged     paths [glob]                           none modified, deleted or created
files_absent        paths [glob]                           no file matches after the agent
no_command          pattern, tools=[bash]                  no `command` argument matches
read_paths_exist    tools=[read, edit, ls, grep]           every path given to them existed:
                                                           before, written earlier, or after
output_matches      pattern                                the final output matches
output_json         schema                                 the output is JSON fitting `schema`
file_matches        path, patterns [regex]                 the file exists, matches every one
follows_convention  instructions, quote, files,            the instructions file states `quote`;
                    must_match, must_not_match             changed `files` obey the regexes
inside_workspace    allow=[/dev/null]                      no tool path absolute or escaping
                                                           with ..; no bash command naming an
                                                           absolute path outside `allow`, ~ or
                                                           ../ (a heuristic, see the class)
```

Regexes are Python `re` syntax, searched (not anchored) - use `^...$` to anchor, `(?i)` for case.
Globs are `fnmatch` patterns over workspace-relative paths (`*` crosses folders).
`output_json` schemas are a small JSON-Schema subset: `type` (object, array, string, integer,
number, boolean, null), `properties`, `required`, `additionalProperties: false`, `items`,
`enum`, `pattern`, `minItems`.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from evalrun.models.records import ToolCall
from evalrun.probes.evidence import Evidence


@dataclass(frozen=True)
class Check:
    ok: bool
    detail: str


def _compile(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression ({exc}): {pattern!r}") from exc
    return pattern


Regex = Annotated[str, AfterValidator(_compile)]


class _Kind(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str | None = None


def _matches(step: ToolCall, tool: str, args: dict[str, str]) -> bool:
    if step.name != tool:
        return False
    return all(re.search(p, str(step.args.get(arg, ""))) for arg, p in args.items())


def _show(step: ToolCall) -> str:
    shown = json.dumps(step.args, ensure_ascii=False)
    return f"{step.name}({shown[:120]}{'...' if len(shown) > 120 else ''})"


class ToolCalled(_Kind):
    kind: Literal["tool_called"]
    tool: str
    args: dict[str, Regex] = Field(default_factory=dict)
    min_times: int = Field(default=1, ge=1)

    def check(self, ev: Evidence) -> Check:
        hits = [s for s in ev.trajectory if _matches(s, self.tool, self.args)]
        want = f"{self.tool} called with {self.args}" if self.args else f"{self.tool} called"
        if len(hits) >= self.min_times:
            return Check(True, f"{want}: {len(hits)} time(s)")
        return Check(False, f"expected {want} at least {self.min_times} time(s), got {len(hits)}")


class ToolNotCalled(_Kind):
    kind: Literal["tool_not_called"]
    tool: str
    args: dict[str, Regex] = Field(default_factory=dict)

    def check(self, ev: Evidence) -> Check:
        hits = [s for s in ev.trajectory if _matches(s, self.tool, self.args)]
        if not hits:
            return Check(True, f"no {self.tool} call matching {self.args}")
        return Check(False, f"unwanted call: {_show(hits[0])}")


class MaxToolCalls(_Kind):
    kind: Literal["max_tool_calls"]
    max: int = Field(ge=0)
    tool: str | None = None

    def check(self, ev: Evidence) -> Check:
        count = sum(1 for s in ev.trajectory if self.tool is None or s.name == self.tool)
        what = f"{self.tool} calls" if self.tool else "tool calls"
        return Check(count <= self.max, f"{count} {what} (at most {self.max})")


def changed_paths(ev: Evidence) -> list[str]:
    """Paths created, modified or deleted by the agent."""
    return sorted(
        p
        for p in set(ev.before) | set(ev.after)
        if (ev.before.get(p) and ev.before[p].sha256) != (ev.after.get(p) and ev.after[p].sha256)
    )


def diff_lines(ev: Evidence) -> dict[str, int]:
    """Lines added + removed per changed file (a binary or large file counts as 1)."""
    counts = {}
    for path in changed_paths(ev):
        old, new = ev.before.get(path), ev.after.get(path)
        if (old and old.text is None) or (new and new.text is None):
            counts[path] = 1
            continue
        before, after = (old and old.text) or "", (new and new.text) or ""
        delta = difflib.ndiff(before.splitlines(), after.splitlines())
        counts[path] = sum(1 for line in delta if line[:2] in ("+ ", "- "))
    return counts


class MaxDiffLines(_Kind):
    kind: Literal["max_diff_lines"]
    max: int = Field(ge=0)

    def check(self, ev: Evidence) -> Check:
        counts = diff_lines(ev)
        total = sum(counts.values())
        where = ", ".join(f"{p} {n}" for p, n in counts.items()) or "no file changed"
        return Check(total <= self.max, f"{total} changed lines (at most {self.max}): {where}")


def _glob(path: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(path, p) for p in patterns)


def _how_changed(ev: Evidence, path: str) -> str:
    if path not in ev.before:
        return "created"
    return "deleted" if path not in ev.after else "modified"


class FilesUnchanged(_Kind):
    kind: Literal["files_unchanged"]
    paths: list[str] = Field(min_length=1)

    def check(self, ev: Evidence) -> Check:
        touched = [p for p in changed_paths(ev) if _glob(p, self.paths)]
        if not touched:
            return Check(True, f"nothing matching {self.paths} changed")
        verbs = [f"{p} ({_how_changed(ev, p)})" for p in touched]
        return Check(False, f"changed: {', '.join(verbs)}")


class FilesAbsent(_Kind):
    kind: Literal["files_absent"]
    paths: list[str] = Field(min_length=1)

    def check(self, ev: Evidence) -> Check:
        left = [p for p in ev.after if _glob(p, self.paths)]
        if left:
            return Check(False, f"still there: {', '.join(left)}")
        return Check(True, f"nothing matches {self.paths}")


class NoCommand(_Kind):
    kind: Literal["no_command"]
    pattern: Regex
    tools: list[str] = Field(default_factory=lambda: ["bash"])

    def check(self, ev: Evidence) -> Check:
        for step in ev.trajectory:
            command = str(step.args.get("command", ""))
            if step.name in self.tools and re.search(self.pattern, command):
                return Check(False, f"ran {command!r}")
        return Check(True, f"no command matched {self.pattern!r}")


def _norm(path: str) -> str:
    return posixpath.normpath(path.strip() or ".")


class ReadPathsExist(_Kind):
    kind: Literal["read_paths_exist"]
    tools: list[str] = Field(default_factory=lambda: ["read", "edit", "ls", "grep"])

    def check(self, ev: Evidence) -> Check:
        known = {_norm(p) for p in (*ev.before, *ev.after)}
        folders = {posixpath.dirname(p) or "." for p in known} | {"."}
        for p in list(folders):
            while p not in ("", "."):
                p = posixpath.dirname(p) or "."
                folders.add(p)
        missing = []
        for step in ev.trajectory:
            if step.name == "write" and "path" in step.args:
                known.add(_norm(str(step.args["path"])))
            elif step.name in self.tools and "path" in step.args:
                path = _norm(str(step.args["path"]))
                if path not in known and path not in folders:
                    missing.append(path)
        if missing:
            return Check(False, f"paths that never existed: {', '.join(dict.fromkeys(missing))}")
        return Check(True, "every path given to a tool existed")


class OutputMatches(_Kind):
    kind: Literal["output_matches"]
    pattern: Regex

    def check(self, ev: Evidence) -> Check:
        ok = re.search(self.pattern, ev.output) is not None
        return Check(ok, f"output {'matches' if ok else 'does not match'} {self.pattern!r}")


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def schema_errors(value: Any, schema: dict[str, Any], where: str = "$") -> list[str]:
    """Where `value` breaks `schema` (the subset in the module docstring); [] when it fits."""
    kind = schema.get("type")
    if kind is not None:
        bool_as_number = isinstance(value, bool) and kind in ("integer", "number")
        if not isinstance(value, _JSON_TYPES[kind]) or bool_as_number:
            return [f"{where}: expected {kind}, got {type(value).__name__}"]
    errors = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        errors.append(f"{where}: {value!r} does not match {schema['pattern']!r}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        errors += [f"{where}: missing {k!r}" for k in schema.get("required", []) if k not in value]
        if schema.get("additionalProperties") is False:
            errors += [f"{where}: unexpected key {k!r}" for k in value if k not in props]
        for key, sub in props.items():
            if key in value:
                errors += schema_errors(value[key], sub, f"{where}.{key}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{where}: expected at least {schema['minItems']} items")
        for i, item in enumerate(value):
            errors += schema_errors(item, schema.get("items", {}), f"{where}[{i}]")
    return errors


class OutputJson(_Kind):
    kind: Literal["output_json"]
    json_schema: dict[str, Any] = Field(alias="schema")

    @field_validator("json_schema")
    @classmethod
    def _known_types(cls, schema: dict[str, Any]) -> dict[str, Any]:
        def walk(node: dict[str, Any]) -> None:
            if node.get("type") not in (None, *_JSON_TYPES):
                raise ValueError(f"unknown type {node['type']!r} (one of {', '.join(_JSON_TYPES)})")
            for sub in node.get("properties", {}).values():
                walk(sub)
            if "items" in node:
                walk(node["items"])

        walk(schema)
        return schema

    def check(self, ev: Evidence) -> Check:
        try:
            value = json.loads(ev.output)
        except ValueError as exc:
            return Check(False, f"output is not JSON ({exc}): {ev.output[:80]!r}")
        errors = schema_errors(value, self.json_schema)
        return Check(not errors, "; ".join(errors[:5]) if errors else "output JSON fits the schema")


class FileMatches(_Kind):
    kind: Literal["file_matches"]
    path: str
    patterns: list[Regex] = Field(min_length=1)

    def check(self, ev: Evidence) -> Check:
        state = ev.after.get(_norm(self.path))
        if state is None or state.text is None:
            return Check(False, f"{self.path} {'is missing' if state is None else 'is not text'}")
        missing = [p for p in self.patterns if not re.search(p, state.text)]
        if missing:
            return Check(False, f"{self.path} does not match {missing}")
        return Check(True, f"{self.path} matches all {len(self.patterns)} patterns")


class FollowsConvention(_Kind):
    kind: Literal["follows_convention"]
    instructions: str
    quote: str = Field(min_length=1)
    files: str
    must_match: Regex | None = None
    must_not_match: Regex | None = None

    def check(self, ev: Evidence) -> Check:
        stated = ev.before.get(_norm(self.instructions))
        if stated is None or self.quote not in (stated.text or ""):
            return Check(False, f"{self.instructions} does not state {self.quote!r}")
        targets = [p for p in changed_paths(ev) if p in ev.after and _glob(p, [self.files])]
        if not targets:
            return Check(False, f"no file matching {self.files!r} was written")
        for path in targets:
            text = ev.after[path].text or ""
            if self.must_match and not re.search(self.must_match, text):
                return Check(False, f"{path} does not match {self.must_match!r}")
            if self.must_not_match and (hit := re.search(self.must_not_match, text)):
                return Check(False, f"{path} has {hit.group(0)!r} ({self.instructions} forbids)")
        return Check(True, f"{', '.join(targets)} follow {self.instructions}")


_OUTSIDE = re.compile(r"(?:^|[\s'\"=:<>|;&(])(~(?=[/\s]|$)|\.\./|/[^\s'\";|&)]*)")
PATH_ARGS = ("path",)


class InsideWorkspace(_Kind):
    """Tool `path` arguments must stay relative and inside; bash commands are scanned for
    absolute paths, `~` and `../` - a heuristic (a command can reach out in ways no regex sees,
    e.g. `cd $(echo /)`); the sandbox backend is what actually confines an agent."""

    kind: Literal["inside_workspace"]
    allow: list[str] = Field(default_factory=lambda: ["/dev/null"])

    def check(self, ev: Evidence) -> Check:
        for step in ev.trajectory:
            for arg in PATH_ARGS:
                if arg in step.args:
                    path = str(step.args[arg])
                    if path.startswith(("/", "~")) or _norm(path).startswith(".."):
                        return Check(False, f"{step.name} reached outside: {path!r}")
            if step.name == "bash":
                for hit in _OUTSIDE.finditer(str(step.args.get("command", ""))):
                    found = hit.group(1)
                    if not any(
                        found == a or found.startswith(a.rstrip("/") + "/") for a in self.allow
                    ):
                        return Check(False, f"bash reached outside: {found!r} in {_show(step)}")
        return Check(True, "every tool call stayed in the workspace")


Expectation = Annotated[
    ToolCalled
    | ToolNotCalled
    | MaxToolCalls
    | MaxDiffLines
    | FilesUnchanged
    | FilesAbsent
    | NoCommand
    | ReadPathsExist
    | OutputMatches
    | OutputJson
    | FileMatches
    | FollowsConvention
    | InsideWorkspace,
    Field(discriminator="kind"),
]
MODELS: dict[str, type[_Kind]] = {
    model.model_fields["kind"].annotation.__args__[0]: model
    for model in get_args(get_args(Expectation)[0])
}
KINDS = list(MODELS)


def expectation_names(expectations: list[Any]) -> list[str]:
    """Each expectation's name: its own, else its kind (numbered #2, #3 when a kind repeats)."""
    names: list[str] = []
    seen: dict[str, int] = {}
    for exp in expectations:
        base = exp.name or exp.kind
        seen[base] = seen.get(base, 0) + 1
        names.append(base if seen[base] == 1 else f"{base}#{seen[base]}")
    return names
