"""Loading a Harbor task folder: task.toml parsed as liberally as Harbor's own runner (unknown
keys kept and warned, never refused), its instruction, its environment, its steps, and the
static check of its test.sh; the result is a `TaskSpec` and a `HarborFormat` (`task`), or a
`HarborSteps` plan for a multi-step task (`steps`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from evalrun.config.schema import EvalConfig
from evalrun.errors import TaskFormatError
from evalrun.tasks import lint
from evalrun.tasks.base import TaskSpec
from evalrun.tasks.harbor.env import sandbox_spec, separate_verifier, unsupported
from evalrun.tasks.harbor.keys import flatten
from evalrun.tasks.harbor.steps import load_steps
from evalrun.tasks.harbor.task import (
    TEST_SCRIPT,
    HarborFormat,
    HarborLayout,
    read_instruction,
    task_spec,
)
from evalrun.tasks.harbor.toml import HarborToml, StepTable, fill_templates, parse


def _keys(model: type[BaseModel]) -> set[str]:
    """The dotted keys of `model`'s fields; a field that is a table of its own, by its keys."""
    keys = set()
    for name, info in model.model_fields.items():
        table = info.annotation
        if isinstance(table, type) and issubclass(table, BaseModel):
            keys |= {f"{name}.{key}" for key in table.model_fields}
        else:
            keys.add(name)
    return keys


# task.toml keys evalrun acts on: the typed ones, less the schema version (kept and shown)
USED_KEYS = frozenset(_keys(HarborToml) - {"schema_version", "version"})
# ... and in each [[steps]] entry: its name, gate, healthcheck, and the same [agent]/[verifier] keys
USED_STEP_KEYS = frozenset(_keys(StepTable))


def load(
    folder: Path, *, reward_threshold: float = EvalConfig.reward_threshold, strict: bool = False
) -> tuple[TaskSpec, HarborFormat]:
    """Load a Harbor task folder; raise `TaskFormatError` naming the file and key.

    Keys Harbor's models do not define load and become the format's `warnings`; `strict` makes
    them an error instead.
    """
    layout = HarborLayout(folder)
    config, raw, unknown = parse(layout.task_file)
    if unknown and strict:
        listed = "; ".join(u.describe() for u in unknown)
        raise TaskFormatError(
            layout.task_file,
            f"{listed} (Harbor ignores them; strict_formats refuses them)",
            field=unknown[0].dotted,
        )
    task_file = layout.task_file
    env = fill_templates(config.environment.env, task_file, "environment.env")
    box = sandbox_spec(config, task_file, folder.name, layout.environment_dir, env)
    fmt = HarborFormat(
        layout=layout,
        config=config,
        reward_threshold=reward_threshold,
        sandbox_spec=box,
        separate_verifier=separate_verifier(config, task_file, folder.name, layout.tests_dir, box),
        verifier_env=fill_templates(config.verifier.env, task_file, "verifier.env"),
        solution_env=fill_templates(config.solution.env, task_file, "solution.env"),
        unsupported=tuple(unsupported(config, layout.environment_dir, layout.tests_dir)),
        warnings=tuple(f"{task_file}: {u.describe()}" for u in unknown),
        kept_fields={**_kept(raw), **{u.dotted: u.value for u in unknown}},
    )
    if config.steps:
        steps = load_steps(fmt)
        fmt = dataclasses.replace(fmt, step_plan=steps)
        prompt = (
            read_instruction(layout.instruction_file)
            if layout.instruction_file.is_file()
            else "\n\n".join(f"## Step {s.name}\n\n{s.spec.prompt}" for s in steps.steps)
        )
    else:
        prompt = read_instruction(layout.instruction_file)
        bundled = fmt.separate_verifier is not None and fmt.separate_verifier.bundled_tests
        if not layout.test_script.is_file() and not bundled:
            raise TaskFormatError(
                layout.test_script, "missing: a Harbor task needs tests/test.sh (the verifier)"
            )
    step_names = [step.name for step in config.steps or ()]
    lint.refuse(lint.bash_faults(test_scripts(layout, step_names)))
    return task_spec(config, folder.name, prompt, config.agent.timeout_sec), fmt


def test_scripts(layout: HarborLayout, steps: Sequence[str] | None = None) -> list[Path]:
    """tests/test.sh and the test.sh of each step (`steps`: those task.toml names; None: every
    steps/<name>/ folder) that exist. Only these are parsed at load (`bash -n`): a bash syntax
    error fails in every bash, but the Python under tests/ runs on the task image's Python, which
    may accept syntax the host's refuses - and Harbor's own runner would run it."""
    folders = (
        [layout.step_dir(name) for name in steps]
        if steps is not None
        else sorted(p for p in (layout.root / "steps").glob("*") if p.is_dir())
    )
    candidates = [layout.test_script, *(folder / "tests" / TEST_SCRIPT for folder in folders)]
    return [path for path in candidates if path.is_file()]


def _kept(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Every field evalrun does not act on, by dotted key (`steps[0].artifacts` for a step's)."""

    def used(key: str, keys: frozenset[str]) -> bool:
        parts = key.split(".")
        return any(".".join(parts[:n]) in keys for n in range(1, len(parts) + 1))

    kept = {k: v for k, v in flatten(raw).items() if not used(k, USED_KEYS)}
    steps = raw.get("steps")
    for index, step in enumerate(steps if isinstance(steps, list) else []):
        if isinstance(step, dict):
            for key, value in flatten(step).items():
                if not used(key, USED_STEP_KEYS):
                    kept[f"steps[{index}].{key}"] = value
    return kept
