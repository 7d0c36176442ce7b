"""Reading the reward a Harbor verifier (tests/test.sh) leaves in its verifier folder.

`reward.txt` holds one number; else `reward.json` holds an object, `{"reward": 0.75, ...}` (a
lone number, or an object with a single key, is accepted too). The reward comes back with the
scores the sample keeps: `reward`, plus every other number in reward.json as `reward.<key>`.
Anything else - no file, not a number, NaN - raises `RewardError`: no verdict from the verifier,
which the format grades as a `fail` with that reason, never a silent 0.
"""

from __future__ import annotations

import json
import math
import posixpath

from evalrun.sandbox.base import Sandbox

VERIFIER_ENV = "VERIFIER_DIR"


class RewardError(Exception):
    """The verifier left no usable reward."""


class RewardMissing(RewardError):
    """The verifier left no reward file at all."""


async def read_reward(sandbox: Sandbox, verifier_dir: str) -> tuple[float, dict[str, float]]:
    """(reward, scores) from reward.txt, else reward.json, in `verifier_dir`."""
    for name, parse in (("reward.txt", _from_text), ("reward.json", _from_json)):
        try:
            data = await sandbox.read_file(posixpath.join(verifier_dir, name))
        except FileNotFoundError:
            continue
        return parse(data.decode("utf-8", errors="replace"))
    raise RewardMissing(
        f"tests/test.sh wrote no reward: neither reward.txt nor reward.json in ${VERIFIER_ENV}"
    )


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise RewardError(f"{where} is not a number: {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise RewardError(f"{where} is not a number: {str(value)[:80]!r}") from None
    if not math.isfinite(number):
        raise RewardError(f"{where} is not a finite number: {value!r}")
    return number


def _from_text(text: str) -> tuple[float, dict[str, float]]:
    reward = _number(text.strip(), "reward.txt")
    return reward, {"reward": reward}


def _from_json(text: str) -> tuple[float, dict[str, float]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RewardError(f"reward.json is not valid JSON: {exc}") from exc
    if isinstance(data, int | float) and not isinstance(data, bool):
        data = {"reward": data}
    if not isinstance(data, dict) or not data:
        raise RewardError(
            f'reward.json must be an object like {{"reward": 1.0}}, got {text[:80]!r}'
        )
    if "reward" in data:
        key = "reward"
    elif len(data) == 1:
        key = next(iter(data))
    else:
        raise RewardError(f"reward.json has no 'reward' key (keys: {', '.join(map(str, data))})")
    reward = _number(data[key], f"reward.json {key!r}")
    scores = {"reward": reward}
    for name, value in data.items():
        if name != key and isinstance(value, int | float) and not isinstance(value, bool):
            scores[f"reward.{name}"] = float(value)
    return reward, scores
