"""Who may import whom: the core never imports the Opik package; heavy SDKs load only when used."""

from __future__ import annotations

import ast
import subprocess
import sys

from tests.conftest import REPO

CORE = [
    "evalrun.cli.main", "evalrun.run.runner", "evalrun.run.plan", "evalrun.run.engine", "evalrun.analysis.gate",
    "evalrun.analysis.diff", "evalrun.analysis.sweep", "evalrun.analysis.power", "evalrun.rundir.log", "evalrun.rundir.store",
    "evalrun.run.judges", "evalrun.honesty.check", "evalrun.report.files", "evalrun.cli.commands.runs",
    "evalrun.report.listing", "evalrun.report.probes", "evalrun.honesty.probes",
    "evalrun.run.plan", "evalrun.sandbox.local", "evalrun.sandbox.bwrap.backend",
    "evalrun.sandbox.docker.backend", "evalrun.sandbox.modal", "evalrun.tasks.harbor.task",
]  # fmt: skip


def test_the_core_never_imports_the_opik_package_or_an_sdk():
    code = (
        f"import sys; [__import__(m) for m in {CORE!r}]; "
        "print(sorted({m.split('.')[0] if not m.startswith('evalrun.integrations.opik') else 'evalrun.integrations.opik' "
        "for m in sys.modules if m.startswith(('evalrun.integrations.opik', 'opik', 'litellm', 'docker', "
        "'modal', 'pydantic_ai', 'opentelemetry.sdk', 'pandas', 'pyarrow'))}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# --- the package graph is one-way, and no module imports itself in a circle --------------------

# evalrun's packages from the bottom up: a package may import only those before it (and the
# foundation modules at evalrun's top level, which import no package but `bundled` data).
LAYERS = [
    "bundled", "config", "models", "sandbox", "tasks", "verifier", "gateway", "agents", "probes",
    "analysis", "rundir", "report", "run", "honesty", "integrations", "cli",
]  # fmt: skip
FOUNDATION = {"errors", "retry", "console", "extras"}  # evalrun/<name>.py
TYPE_ONLY = {"conformance"}  # imports everything under TYPE_CHECKING, to type-check the seams


def _imports() -> dict[str, set[str]]:
    """Every module of evalrun -> the evalrun modules it imports (any statement, any depth)."""
    root = REPO / "evalrun"
    modules = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    found: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                wanted = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                wanted = [a.name for a in node.names]
            else:
                continue
            for want in wanted:
                while want and want not in modules:
                    want = want.rpartition(".")[0]
                if want and want != name:
                    targets.add(want)
        found[name] = targets
    return found


def _layer(module: str) -> tuple[str, int | None]:
    part = module.split(".")[1] if "." in module else ""
    if part in LAYERS:
        return part, LAYERS.index(part)
    return part, None


def test_every_import_runs_down_the_layers():
    upward = []
    for module, targets in _imports().items():
        package, level = _layer(module)
        if package in TYPE_ONLY or module == "evalrun":
            continue
        for target in targets:
            other, other_level = _layer(target)
            if other == package:
                continue
            if package in FOUNDATION:
                assert other == "bundled" or other in FOUNDATION, f"{module} imports {target}"
                continue
            assert level is not None, f"{module}: evalrun.{package} is in no layer of LAYERS"
            if other_level is not None and other_level > level:
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_no_module_imports_itself_through_a_circle():
    graph = _imports()
    circles, seen = [], set()

    def visit(node: str, path: list[str]) -> None:
        for nxt in graph.get(node, ()):
            if nxt in path:
                circle = path[path.index(nxt) :]
                key = frozenset(circle)
                if key not in seen:
                    seen.add(key)
                    circles.append(" -> ".join([*circle, nxt]))
            elif len(path) < 12:
                visit(nxt, [*path, nxt])

    for start in sorted(graph):
        visit(start, [start])
    assert circles == []
