"""evalrun and Harbor side by side on the same Harbor-format task folders (issue 26's measure).

    bench/harbor_env.sh                            # Harbor 0.26.0 in an environment of its own
    .venv/bin/python bench/harbor_side_by_side.py [--tasks-dir DIR ...] [--rounds 3]

The task folders of every `--tasks-dir` (default: the repository's Harbor fixtures that exist -
tests/fixtures/harbor, harbor-separate, harbor-compose, harbor-network, harbor-mcp) are copied
into one suite folder, and on the same machine, one after the other, each runner runs it on
Docker with its oracle agent and its do-nothing agent (evalrun's `noop`, Harbor's `nop`), 1
trial per task, the same number of samples in flight:

    evalrun tasks_dir=<suite> sandbox=docker agent=oracle sandbox.build_network=host concurrency=N
    harbor run -p <suite> -a oracle -e docker -n N --extra-docker-compose <build-network overlay>

Both build every task Dockerfile as written. There is no image registry here, so each FROM name
of the suite's Dockerfiles that the engine lacks is tagged from a local Debian image (the base
image plus this machine's CA bundle, as tests/conftest.py's `tag_local_bases` does) - for both
runners alike. RUN steps get the host's network: evalrun through `sandbox.build_network=host`,
Harbor through a compose overlay giving its `main` service `build.network: host` (Harbor has no
setting of its own; tasks whose docker-compose.yaml builds sidecars run as a Harbor job of their
own whose overlay names those sidecars too, see `harbor_groups`; no overlay reaches the build of
a separate verifier's tests/Dockerfile - Harbor says so in its log).
An untimed oracle round of each runner first fills the image caches (`--no-warmup` skips it),
so the wall times compare warm runs.

Printed: a row per task (pass / fail / error / skipped, and why for the last two), the pass
count and wall time of each runner and agent, each exact command, and what could not run and
why. Harbor drops a folder its task model refuses without a word; its reason is asked of
Harbor's own `Task.is_valid_dir` / `TaskConfig` in its environment. A sample passes at reward >= 1
in both (Harbor's `reward` key, else the mean of its rewards). Nothing here asserts; the
figures go into docs/harbor.md. Not run in CI: it needs bench/harbor_env.sh's environment.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

import evalrun
from evalrun.rundir.log import RunLog

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = [
    ROOT / "tests" / "fixtures" / n
    for n in ("harbor", "harbor-separate", "harbor-compose", "harbor-network", "harbor-mcp")
]
CACHE = Path("/var/cache/evalrun-bench")
REGISTRIES_BASE = "evalrun-bench/debian-registries:bookworm"
# (evalrun's agent, Harbor's agent) - the gold solution, then nothing at all.
AGENTS = (("oracle", "oracle"), ("noop", "nop"))
ERROR_LINE = re.compile(r"^[A-Za-z_.]*(Error|Exception): ")
FROM_LINE = re.compile(
    r"^\s*FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?", re.IGNORECASE | re.MULTILINE
)

# Run with the Python of Harbor's environment: why Harbor's task model refuses each folder it would drop.
HARBOR_REFUSALS = """
import json, sys
from pathlib import Path
from harbor.models.task.config import TaskConfig
from harbor.models.task.paths import TaskPaths
from harbor.models.task.task import Task
refused = {}
for folder in sys.argv[1:]:
    if Task.is_valid_dir(folder):
        continue
    try:
        paths = TaskPaths(folder)
        config = TaskConfig.model_validate_toml(paths.config_path.read_text())
        Task._validate_input_paths(config, paths)
        Task._validate_tests(config, paths)
        if not config.environment.docker_image and not paths.environment_dir.is_dir():
            reason = "no [environment] docker_image and no environment/ folder"
        else:
            reason = "Task.is_valid_dir is false"
    except Exception as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        reason = ": ".join(lines[1:3] if len(lines) > 2 else lines)
    refused[Path(folder).name] = reason
print(json.dumps(refused))
"""


@dataclass(frozen=True)
class Verdict:
    word: str  # pass | fail | error | skipped | absent
    why: str = ""


@dataclass
class Job:
    """One process of a leg: its command, the tasks it runs, its log, how it ended."""

    command: list[str]
    tasks: list[str]
    log: Path
    exit_code: int = 0
    error: str = ""  # the last error the process printed, when it exited non-zero


@dataclass(frozen=True)
class Group:
    """Tasks Harbor runs as one job: their folder and the compose overlay for their builds."""

    folder: Path
    tasks: list[str]
    overlay: Path


@dataclass
class Leg:
    """One runner with one agent over the whole suite (Harbor: a job per group, `harbor_groups`)."""

    runner: str
    agent: str
    jobs: list[Job]
    wall_s: float = 0.0
    verdicts: dict[str, Verdict] = field(default_factory=dict)

    @property
    def passes(self) -> int:
        return sum(v.word == "pass" for v in self.verdicts.values())


def stage_suite(dirs: list[Path], suite: Path) -> list[str]:
    """Copy every task folder of `dirs` into `suite`; the task names, sorted."""
    suite.mkdir(parents=True)
    for folder in dirs:
        for task in sorted(p for p in folder.iterdir() if p.is_dir()):
            if (suite / task.name).exists():
                sys.exit(f"two task folders are named {task.name!r} (one in {folder}): rename one")
            shutil.copytree(task, suite / task.name, symlinks=True)
    return sorted(p.name for p in suite.iterdir())


def from_names(suite: Path) -> list[str]:
    """The images the suite's Dockerfiles build FROM (not earlier stages, not ARG-made names)."""
    names: set[str] = set()
    for dockerfile in suite.rglob("Dockerfile"):
        stages: set[str] = set()
        for name, alias in FROM_LINE.findall(dockerfile.read_text(errors="replace")):
            if name not in stages and "$" not in name:
                names.add(name)
            if alias:
                stages.add(alias)
    return sorted(names)


def docker(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check)


def has_image(name: str) -> bool:
    return docker("image", "inspect", name, check=False).returncode == 0


def tag_bases(names: list[str], base: str) -> list[str]:
    """Tag a Debian image that trusts this machine's CA bundle under each FROM name the engine
    lacks; one line per name saying what was done."""
    if not has_image(REGISTRIES_BASE):
        with tempfile.TemporaryDirectory() as context:
            shutil.copy("/etc/ssl/certs/ca-certificates.crt", Path(context) / "ca.crt")
            dockerfile = f"FROM {base}\nCOPY ca.crt /etc/ssl/certs/ca-certificates.crt\n"
            (Path(context) / "Dockerfile").write_text(dockerfile)
            docker("build", "--network", "none", "-q", "-t", REGISTRIES_BASE, context)
    lines = []
    for name in names:
        if has_image(name):
            lines.append(f"{name}: already in the engine, used as it is")
        else:
            docker("tag", REGISTRIES_BASE, name)
            lines.append(f"{name}: tagged locally from {REGISTRIES_BASE} ({base} + CA bundle)")
    return lines


def run_leg(leg: Leg, env: dict[str, str] | None = None) -> None:
    """Run the leg's jobs one after the other, each one's output to its log; the total wall time
    on the leg, how each ended on the job."""
    start = time.monotonic()
    for job in leg.jobs:
        with job.log.open("w") as out:
            done = subprocess.run(job.command, stdout=out, stderr=subprocess.STDOUT, env=env)
        job.exit_code = done.returncode
        if done.returncode:
            job.error = last_error(job.log.read_text(errors="replace"))
    leg.wall_s = time.monotonic() - start


def last_error(log: str) -> str:
    """The last `SomeError: message` of a log, its lines joined (unboxed from rich's frames)."""
    lines = [line.strip("│╭╮╰╯─ \t") for line in log.splitlines()]
    starts = [i for i, line in enumerate(lines) if ERROR_LINE.match(line)]
    if not starts:
        return ""
    message = []
    for line in lines[starts[-1] :]:
        if not line:
            break
        message.append(line)
    return " ".join(message)


def evalrun_leg(
    suite: Path, tasks: list[str], agent: str, work: Path, concurrency: int, tag: str
) -> Leg:
    run_dir = work / f"evalrun-{agent}{tag}"
    command = [
        str(Path(sys.executable).with_name("evalrun")),
        f"tasks_dir={suite}",
        "sandbox=docker",
        f"agent={agent}",
        "sandbox.build_network=host",
        f"concurrency={concurrency}",
        "trials=1",
        f"run_dir={run_dir}",
    ]
    leg = Leg("evalrun", agent, [Job(command, tasks, work / f"evalrun-{agent}{tag}.log")])
    run_leg(leg)
    if not (run_dir / "plan.json").is_file():
        return leg  # the run did not start: fill_gaps names the log
    run = RunLog.open(run_dir)
    for record in run.records():
        leg.verdicts[record.task_id] = Verdict(str(record.outcome), record.reason or "")
    summary = run.saved_summary
    for skipped in summary.skipped if summary else run.plan.skipped:
        leg.verdicts[skipped.id] = Verdict("skipped", f"{skipped.kind}: {skipped.reason}")
    return leg


def harbor_groups(suite: Path, tasks: list[str], work: Path) -> list[Group]:
    """The task folder, tasks and compose overlay of each Harbor job. Harbor's `--extra-docker-compose`
    applies to every task of a job, and a service it names that a task lacks would be added to
    that task; so tasks whose docker-compose.yaml builds sidecars run in a job of their own, whose
    overlay gives `main` and those sidecars the host's network for their builds."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for task in tasks:
        compose = suite / task / "environment" / "docker-compose.yaml"
        services = (
            (yaml.safe_load(compose.read_text()) or {}).get("services", {})
            if compose.is_file()
            else {}
        )
        built = tuple(
            sorted(
                n
                for n, s in services.items()
                if n != "main" and isinstance(s, dict) and "build" in s
            )
        )
        groups.setdefault(built, []).append(task)
    found = []
    for number, (sidecars, members) in enumerate(sorted(groups.items())):
        folder = suite if len(groups) == 1 else work / "harbor-groups" / str(number)
        if folder != suite:
            folder.mkdir(parents=True, exist_ok=True)
            for task in members:
                if not (folder / task).exists():
                    shutil.copytree(suite / task, folder / task, symlinks=True)
        build = {"build": {"network": "host"}}
        overlay = work / f"build-network-host-{number}.yaml"
        overlay.write_text(yaml.safe_dump({"services": {n: build for n in ("main", *sidecars)}}))
        found.append(Group(folder, members, overlay))
    return found


def harbor_leg(
    harbor: Path,
    groups: list[Group],
    agent: str,
    work: Path,
    concurrency: int,
    tag: str,
) -> Leg:
    jobs = work / "harbor-jobs"
    name = f"harbor-{agent}{tag}"
    leg = Leg("harbor", agent, [])
    for number, group in enumerate(groups):
        command = [
            str(harbor / "bin" / "harbor"), "run", "-p", str(group.folder), "-a", agent,
            "-e", "docker", "-n", str(concurrency), "-o", str(jobs), "--job-name", f"{name}-{number}",
            "-y", "-q", "--extra-docker-compose", str(group.overlay),
        ]  # fmt: skip
        leg.jobs.append(Job(command, group.tasks, work / f"{name}-{number}.log"))
    env = harbor_environ(harbor, work)
    run_leg(leg, env)
    for result in sorted(jobs.glob(f"{name}-*/*/result.json")):
        trial = json.loads(result.read_text())
        task = Path(trial["config"]["task"]["path"]).name
        leg.verdicts[task] = harbor_verdict(trial)
    return leg


def harbor_verdict(trial: dict) -> Verdict:
    """A Harbor trial's result.json as pass / fail / error."""
    rewards = (trial.get("verifier_result") or {}).get("rewards") or {}
    failure = trial.get("exception_info") or {}
    why = (
        f"{failure.get('exception_type', '')}: {failure.get('exception_message', '')}"
        if failure
        else ""
    )
    if not rewards:
        return Verdict("error", why or "no reward")
    reward = rewards.get("reward", sum(rewards.values()) / len(rewards))
    return Verdict("pass" if reward >= 1 else "fail", why)


def harbor_environ(harbor: Path, work: Path) -> dict[str, str]:
    """Harbor's variables: the work folder shared at the same path (HARBOR_BIND, for
    harbor_env.sh's Debian route), its compose plugin's DOCKER_CONFIG if harbor_env.sh made one,
    and litellm's bundled cost map (Harbor imports litellm, which else spends seconds failing
    to download it here)."""
    env = dict(os.environ, HARBOR_BIND=str(work), LITELLM_LOCAL_MODEL_COST_MAP="True")
    if (harbor / "docker-config").is_dir():
        env["DOCKER_CONFIG"] = str(harbor / "docker-config")
    return env


def harbor_refusals(harbor: Path, suite: Path, tasks: list[str], work: Path) -> dict[str, str]:
    """Why Harbor's task model refuses each folder it would drop; `RuntimeError` naming the
    command's error when it cannot be asked."""
    python = str(harbor / "bin" / "python")
    done = subprocess.run(
        [python, "-c", HARBOR_REFUSALS, *(str(suite / t) for t in tasks)],
        capture_output=True, text=True, env=harbor_environ(harbor, work),
    )  # fmt: skip
    if done.returncode:
        raise RuntimeError(f"{python} exited {done.returncode}: {clipped(done.stderr)}")
    return dict(json.loads(done.stdout))


def fill_gaps(leg: Leg, tasks: list[str], refused: dict[str, str]) -> None:
    """A task a leg has no verdict for: skipped when its runner refused the folder, else an
    error of the leg (its process ended before the task ran)."""
    for task in tasks:
        if task in leg.verdicts:
            continue
        job = next(j for j in leg.jobs if task in j.tasks)
        if leg.runner == "harbor" and task in refused:
            why = f"dropped without a word; Harbor's model: {refused[task]}"
            leg.verdicts[task] = Verdict("skipped", why)
        else:
            ended = (
                f"exited {job.exit_code}: {job.error}" if job.error else f"exited {job.exit_code}"
            )
            why = f"no result: {leg.runner} {ended} (log: {job.log})"
            leg.verdicts[task] = Verdict("error" if job.exit_code else "absent", why)


def clipped(text: str, keep: int = 360) -> str:
    """`text` cut in the middle when long: a failure's cause is often at its end (Harbor puts
    the command's output after the whole compose command line)."""
    text = " ".join(text.split())
    return text if len(text) <= keep else f"{text[: keep // 3]} [...] {text[-2 * keep // 3 :]}"


def wall(rounds: list[Leg]) -> str:
    times = sorted(leg.wall_s for leg in rounds)
    if len(times) == 1:
        return f"{times[0]:.1f} s"
    return f"{statistics.median(times):.1f} s ({times[0]:.1f}-{times[-1]:.1f})"


def report(tasks: list[str], rounds: list[list[Leg]]) -> None:
    """The table of the first round's verdicts with every round's wall times; then each verdict
    that changed between rounds, the reasons, and the commands."""
    legs = rounds[0]
    label = "wall time" if len(rounds) == 1 else f"wall, median of {len(rounds)} (min-max)"
    rows = [["task", *(f"{leg.runner} {leg.agent}" for leg in legs)]]
    rows += [[task, *(leg.verdicts[task].word for leg in legs)] for task in tasks]
    rows.append(["passed", *(f"{leg.passes}/{len(tasks)}" for leg in legs)])
    rows.append([label, *(wall([r[i] for r in rounds]) for i in range(len(legs)))])
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    print()
    for row in rows:
        print("  ".join(f"{cell:<{width}}" for cell, width in zip(row, widths, strict=True)))
    for later in rounds[1:]:
        for first, leg in zip(legs, later, strict=True):
            for task in tasks:
                if leg.verdicts[task].word != first.verdicts[task].word:
                    print(
                        f"  changed in a later round: {leg.runner} {leg.agent} / {task}: {leg.verdicts[task].word}"
                    )
    print("\nwhy (every verdict other than pass, and fails that carry a reason):")
    for leg in legs:
        for task in tasks:
            verdict = leg.verdicts[task]
            if verdict.word != "pass" and verdict.why:
                print(
                    f"  {leg.runner} {leg.agent} / {task}: {verdict.word}: {clipped(verdict.why)}"
                )
    print("\ncommands (each output in the log beside it):")
    for leg in (leg for legs in rounds for leg in legs):
        print(f"  [{leg.runner} {leg.agent}: {leg.wall_s:.1f} s]")
        for job in leg.jobs:
            print(f"    exit {job.exit_code}: {shlex.join(job.command)}\n      log: {job.log}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tasks-dir",
        action="append",
        type=Path,
        help="a folder of Harbor task folders (repeatable)",
    )
    parser.add_argument(
        "--harbor", type=Path, default=CACHE / "harbor", help="bench/harbor_env.sh's folder"
    )
    parser.add_argument(
        "--work",
        type=Path,
        help="where the suite, runs and logs go (default: a new folder under /var/cache/evalrun-bench/side-by-side)",
    )
    parser.add_argument(
        "--concurrency", type=int, default=2, help="samples in flight, both runners"
    )
    parser.add_argument(
        "--base-image", default=os.environ.get("EVALRUN_DOCKER_IMAGE", "evalrun-base:bookworm")
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="timed rounds (the wall time is their median)"
    )
    parser.add_argument("--no-warmup", action="store_true", help="skip the untimed oracle round")
    args = parser.parse_args()

    not_run: list[str] = []
    dirs = args.tasks_dir or [d for d in FIXTURES if d.is_dir()]
    not_run += [
        f"{d.relative_to(ROOT)}: not in this checkout"
        for d in FIXTURES
        if not args.tasks_dir and not d.is_dir()
    ]
    if docker("info", check=False).returncode != 0:
        sys.exit("no Docker engine answers `docker info` (start one: scripts/docker-engine.sh)")
    if not has_image(args.base_image):
        sys.exit(f"no base image {args.base_image} (build it: scripts/build-base-image.sh)")
    harbor_ok = (args.harbor / "bin" / "harbor").is_file()
    if not harbor_ok:
        not_run.append(
            f"Harbor: no {args.harbor}/bin/harbor - run bench/harbor_env.sh {args.harbor}"
        )

    work = (args.work or CACHE / "side-by-side" / time.strftime("%Y%m%d-%H%M%S")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    suite = work / "suite"
    tasks = stage_suite(dirs, suite)
    print(f"suite: {len(tasks)} task folders from {', '.join(str(d) for d in dirs)} -> {suite}")
    harbor_version = (
        subprocess.run(
            [str(args.harbor / "bin" / "harbor"), "--version"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        if harbor_ok
        else "-"
    )
    print(
        f"runners: evalrun from {Path(evalrun.__file__).parent} ({sys.executable}); Harbor {harbor_version} from {args.harbor}"
    )
    print("images:")
    for line in tag_bases(from_names(suite), args.base_image):
        print(f"  {line}")
    refused: dict[str, str] = {}
    if harbor_ok:
        try:
            refused = harbor_refusals(args.harbor, suite, tasks, work)
        except RuntimeError as exc:
            not_run.append(f"why Harbor drops a folder (its task model could not be asked): {exc}")
    groups = harbor_groups(suite, tasks, work)

    def round_of(ours: str, theirs: str, tag: str) -> list[Leg]:
        legs = [evalrun_leg(suite, tasks, ours, work, args.concurrency, tag)]
        if harbor_ok:
            legs.append(harbor_leg(args.harbor, groups, theirs, work, args.concurrency, tag))
        return legs

    if not args.no_warmup:
        print("warm-up: one untimed oracle round of each runner (image builds)...", flush=True)
        round_of("oracle", "oracle", "-warmup")
    rounds: list[list[Leg]] = []
    for number in range(1, args.rounds + 1):
        legs: list[Leg] = []
        for ours, theirs in AGENTS:
            print(f"round {number}: evalrun agent={ours}, Harbor -a {theirs}...", flush=True)
            legs += round_of(ours, theirs, f"-{number}")
        for leg in legs:
            fill_gaps(leg, tasks, refused)
        rounds.append(legs)
    report(tasks, rounds)
    if not_run:
        print("\nnot run:")
        for line in not_run:
            print(f"  {line}")


if __name__ == "__main__":
    main()
