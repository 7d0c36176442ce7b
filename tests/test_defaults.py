"""Each default has one home: the typed schema in `evalrun.config.schema`. A class Hydra builds
from a schema, and every function or model taking a run-wide setting, either takes no default
for it or takes the schema's (`EvalConfig.reward_threshold`, `_CONF.memory_mb`) - never a second
literal that could drift from the first."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import textwrap
from typing import Any

from omegaconf import MISSING

from evalrun.config import schema
from tests.conftest import REPO

EMPTY = (None, "", (), False, 0)  # "not given": no second fact
# The same name for another setting: task.yaml's own opt-out of the verifier hardening (a task
# that truly needs its workspace to provide a standard-library module), default on like the run's.
NAMESAKES = {("base.py", "verifier_hardening")}
SCHEMA_TARGETS = {schema.InstalledAgentConf: "evalrun.agents.installed.InstalledAgent"}


def _literal(default: ast.expr) -> bool:
    """A default written out (`1.0`, `"none"`), not read from a schema (`XConf.field`)."""
    if isinstance(default, ast.Constant):
        return default.value not in EMPTY
    return isinstance(default, ast.List | ast.Tuple | ast.Dict) and bool(
        getattr(default, "elts", None) or getattr(default, "keys", None)
    )


def _defaults(args: ast.arguments) -> list[tuple[str, ast.expr]]:
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
    return [(a.arg, d) for a, d in pairs]


def _schemas() -> dict[type, Any]:
    """Each schema with a `_target_` -> the class or function Hydra builds from it."""
    found: dict[type, Any] = {}
    for conf in vars(schema).values():
        if not (isinstance(conf, type) and dataclasses.is_dataclass(conf)):
            continue
        target = SCHEMA_TARGETS.get(conf) or getattr(conf, "_target_", None)
        if isinstance(target, str) and "." in target:
            module, _, name = target.rpartition(".")
            found[conf] = getattr(importlib.import_module(module), name)
    return found


def _given(target: Any) -> list[tuple[str, ast.expr]]:
    """The defaults `target` gives: its `__init__`'s (or a function's), and a dataclass's or
    model's fields."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(target))).body[0]
    if isinstance(tree, ast.FunctionDef | ast.AsyncFunctionDef):
        return _defaults(tree.args)
    pairs = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            pairs += _defaults(node.args)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            pairs.append((node.target.id, node.value))
    return pairs


def test_what_hydra_builds_takes_its_defaults_from_the_schema():
    again = []
    for conf, target in _schemas().items():
        fields = {f.name for f in dataclasses.fields(conf)}
        again += [
            f"{target.__qualname__}({name}={ast.unparse(default)}) repeats {conf.__name__}"
            for name, default in _given(target)
            if name in fields and _literal(default)
        ]
    assert again == [], "\n".join(again)


def test_run_wide_settings_have_no_second_default():
    settings = {
        f.name
        for conf in (schema.EvalConfig, schema.TimeoutsConf, schema.BudgetConf)
        for f in dataclasses.fields(conf)
        if f.default not in (dataclasses.MISSING, MISSING, *EMPTY) and f.name != "name"
    }
    again = []
    for path in (REPO / "evalrun").rglob("*.py"):
        if path.name == "schema.py" or "bundled" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                pairs = _defaults(node.args)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                pairs = [(node.target.id, node.value)] if node.value is not None else []
            else:
                continue
            again += [
                f"{path.relative_to(REPO)}:{d.lineno} {name} = {ast.unparse(d)}"
                for name, d in pairs
                if name in settings and _literal(d) and (path.name, name) not in NAMESAKES
            ]
    assert again == [], "\n".join(again)
