"""Every implementation of a seam, checked against the seam's Protocol by mypy (`scripts/test.sh`).

Hydra builds backends, agents, trackers and judges from `_target_` strings, so no call site names
their classes and a type checker would never compare them with the Protocol they must satisfy.
The functions below do only that: each returns its argument as the Protocol type, so an
implementation that drops a method, changes a signature or stops declaring a capability
(`Sandbox.is_container`, `Sandbox.switches_users`) fails `mypy`. Nothing here runs; nothing
imports this module at run time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalrun.agents.base import Agent
    from evalrun.agents.coder.agent import CoderAgent
    from evalrun.agents.command import CommandAgent
    from evalrun.agents.installed import InstalledAgent
    from evalrun.agents.noop import NoopAgent
    from evalrun.agents.oracle import OracleAgent, OverlayAgent
    from evalrun.agents.python import PythonAgent
    from evalrun.integrations.opik.geval import GEvalJudge
    from evalrun.integrations.opik.tracker import OpikTracker
    from evalrun.probes.evidence import RecordingAgent
    from evalrun.probes.format import ProbeFormat
    from evalrun.probes.replay import ReplayAgent
    from evalrun.run.judges import Judge, NoJudge
    from evalrun.run.plan import LocalTracker, Tracker
    from evalrun.sandbox.base import Sandbox, SandboxBackend
    from evalrun.sandbox.bwrap.backend import BwrapBackend, BwrapSandbox
    from evalrun.sandbox.docker.backend import DockerBackend, DockerSandbox
    from evalrun.sandbox.local import LocalBackend, LocalSandbox
    from evalrun.sandbox.modal import ModalBackend, ModalSandbox
    from evalrun.tasks.base import StepPlan, TaskFormat
    from evalrun.tasks.harbor.steps import HarborStepFormat, HarborSteps
    from evalrun.tasks.harbor.task import HarborFormat
    from evalrun.tasks.native import NativeFormat

    def backends(
        a: LocalBackend, b: BwrapBackend, c: DockerBackend, d: ModalBackend
    ) -> list[SandboxBackend]:
        return [a, b, c, d]

    def sandboxes(
        a: LocalSandbox, b: BwrapSandbox, c: DockerSandbox, d: ModalSandbox
    ) -> list[Sandbox]:
        return [a, b, c, d]

    def agents(
        a: OracleAgent, b: OverlayAgent, c: NoopAgent, d: CommandAgent, e: CoderAgent,
        f: PythonAgent, g: InstalledAgent, h: ReplayAgent, i: RecordingAgent,
    ) -> list[Agent]:  # fmt: skip
        return [a, b, c, d, e, f, g, h, i]

    def formats(
        a: NativeFormat, b: HarborFormat, c: HarborStepFormat, d: ProbeFormat
    ) -> list[TaskFormat]:
        return [a, b, c, d]

    def step_plans(a: HarborSteps) -> list[StepPlan]:
        return [a]

    def trackers(a: LocalTracker, b: OpikTracker) -> list[Tracker]:
        return [a, b]

    def judges(a: NoJudge, b: GEvalJudge) -> list[Judge]:
        return [a, b]
