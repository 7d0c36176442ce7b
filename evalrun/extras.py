"""Optional SDKs: a feature whose SDK is missing stops with one line naming the extra to install.

The extras themselves are declared once, in pyproject.toml (`evalrun[docker]`, `[modal]`,
`[opik]`, `[agents]`, `[sweep]`, `[export]`, `[all]`). `require` checks that a module can be
imported without importing it, so it costs nothing on the paths that do not need the SDK.
"""

from __future__ import annotations

import re
import shlex
import sys
from importlib.util import find_spec
from pathlib import Path

from evalrun.errors import UsageError


class MissingExtra(UsageError):
    """A feature was chosen whose SDK is not installed."""


def require(module: str, extra: str, feature: str) -> None:
    """Raise `MissingExtra` unless `module` is importable: "<feature> needs <module>: pip install
    'evalrun[<extra>]'" (or what works for the way evalrun was installed: `install_hint`)."""
    try:
        found = find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package of a dotted name is missing
        found = False
    if not found:
        raise MissingExtra(f"{feature} needs the {module} package: {install_hint(extra)}")


def install_hint(extra: str, prefix: str | None = None) -> str:
    """The command that adds `extra` to this evalrun: `pip install 'evalrun[x]'`, or inside a
    pipx install (where pip is not on PATH for it) `pipx inject evalrun <its packages>`."""
    parts = Path(prefix or sys.prefix).parts
    if "pipx" in parts and "venvs" in parts:
        return f"pipx inject evalrun {' '.join(shlex.quote(r) for r in _requirements(extra))}"
    return f"pip install 'evalrun[{extra}]'"


def _requirements(extra: str) -> list[str]:
    """The requirements `extra` adds, from the installed package's metadata (nested extras,
    e.g. `all`, expanded)."""
    from importlib.metadata import PackageNotFoundError, requires

    try:
        declared = requires("evalrun") or []
    except PackageNotFoundError:
        return [f"evalrun[{extra}]"]
    found: list[str] = []
    for line in declared:
        spec, _, marker = line.partition(";")
        if re.search(rf"extra\s*==\s*['\"]{re.escape(extra)}['\"]", marker):
            nested = re.fullmatch(r"evalrun\[(.+)\]", spec.strip())
            if nested:
                for name in nested[1].split(","):
                    found += _requirements(name.strip())
            else:
                found.append(spec.strip())
    return list(dict.fromkeys(found)) or [f"evalrun[{extra}]"]
