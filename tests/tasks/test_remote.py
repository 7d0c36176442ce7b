"""Suites by reference (`evalrun.tasks.remote`), against git repositories built here: file://
URLs, a plain local path, and a repository served over HTTP on 127.0.0.1 - never the internet."""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalrun.config.schema import TasksRefConf
from evalrun.errors import UsageError
from evalrun.tasks.loader import load_suite
from evalrun.tasks.remote import resolve
from evalrun.tasks.remote.reference import GitReference, RegistryReference, parse
from tests.cli.test_main import evalrun
from tests.conftest import SUITE_REPO_TASKS as TASKS
from tests.conftest import git as sh


@pytest.fixture
def conf(tmp_path: Path) -> TasksRefConf:
    return TasksRefConf(registry=str(tmp_path / "registry.json"), cache_dir=str(tmp_path / "c"))


def write_registry(path: Path, url: str, commit: str) -> None:
    tasks = [
        {"name": t, "git_url": url, "git_commit_id": commit, "path": f"tasks/{t}"} for t in TASKS
    ]
    datasets = [
        {"name": "mysuite", "version": "1.0", "description": "two tasks", "tasks": tasks},
        {"name": "mysuite", "version": "0.9", "description": "one task", "tasks": tasks[:1]},
    ]
    path.write_text(json.dumps(datasets))


# --- end to end: the evalrun command ---------------------------------------------------------
def test_a_git_reference_runs_reruns_offline_and_diff_names_the_commit_change(
    suite_repo: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    url = f"file://{suite_repo['path']}"

    def run(ref: str, name: str) -> dict:
        done = evalrun(
            f"tasks_dir=git+{url}@{ref}#tasks",
            "agent=oracle",
            "sandbox=local",
            f"run_dir={tmp_path / name}",
        )
        assert done.returncode == 0, done.stderr
        assert f"suite: git+{url}@{ref}#tasks (commit {suite_repo[ref][:12]})" in done.stdout
        plan = json.loads((tmp_path / name / "plan.json").read_text())
        return plan["provenance"]["tasks_source"]

    first = run("v1", "a")
    assert first["checkouts"] == [
        {"url": url, "commit": suite_repo["v1"], "ref": "v1", "subdir": "tasks"}
    ]
    assert suite_repo["v1"][:12] in (tmp_path / "a" / "report.html").read_text()
    run("v2", "b")
    Path(suite_repo["path"]).rename(tmp_path / "moved")  # the origin is gone: the cache serves
    assert run("v1", "c") == first

    diff = evalrun("diff", str(tmp_path / "a"), str(tmp_path / "b"), "--json")
    assert diff.returncode == 0, diff.stderr
    suite = json.loads(diff.stdout)["config"]["suite"]
    assert suite == {f"commit {url}#tasks": {"a": suite_repo["v1"], "b": suite_repo["v2"]}}
    page = tmp_path / "diff.html"
    text = evalrun("diff", str(tmp_path / "a"), str(tmp_path / "b"), "--html", str(page)).stdout
    assert suite_repo["v1"] in page.read_text() and suite_repo["v2"] in page.read_text()
    assert f"suite changed: commit {url}#tasks: {suite_repo['v1']} -> {suite_repo['v2']}" in text


def test_a_bad_reference_exits_with_the_usage_code_before_anything_runs(
    suite_repo: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    done = evalrun(
        f"tasks_dir=git+file://{suite_repo['path']}@v9#tasks", f"run_dir={tmp_path / 'r'}"
    )
    assert done.returncode == 2
    assert "has no tag, branch or commit 'v9'" in done.stderr and "tags: v1, v2" in done.stderr
    assert not (tmp_path / "r").exists()


# --- resolution ------------------------------------------------------------------------------
def test_a_tag_is_served_from_the_cache_without_the_network(suite_repo, conf, tmp_path) -> None:
    first = resolve(f"git+{suite_repo['path']}@v1#tasks", conf)
    assert [t.id for t in load_suite(first.folder)] == list(TASKS)
    Path(suite_repo["path"]).rename(tmp_path / "moved")
    again = resolve(f"git+{suite_repo['path']}@v1#tasks", conf)
    assert again.folder == first.folder and again.notes == []
    by_commit = resolve(f"git+{suite_repo['path']}@{suite_repo['v1']}#tasks", conf)
    assert by_commit.folder == first.folder


def test_a_branch_is_resolved_again_and_served_from_the_cache_only_when_the_origin_is_gone(
    suite_repo, conf, tmp_path
) -> None:
    reference = f"git+file://{suite_repo['path']}@main#tasks"
    assert resolve(reference, conf).source.checkouts[0].commit == suite_repo["v2"]
    repo = Path(suite_repo["path"])
    (repo / "tasks" / TASKS[1] / "task.yaml").write_text(
        (repo / "tasks" / TASKS[1] / "task.yaml").read_text() + "# v3\n"
    )
    sh("commit", "--quiet", "-am", "v3", cwd=repo)
    v3 = sh("rev-parse", "HEAD", cwd=repo)
    moved = resolve(reference, conf)
    assert moved.source.checkouts[0].commit == v3 and moved.notes == []
    repo.rename(tmp_path / "moved")
    offline = resolve(reference, conf)
    assert offline.source.checkouts[0].commit == v3
    assert (
        offline.notes
        and "branch main" in offline.notes[0]
        and "not re-resolved" in offline.notes[0]
    )


def test_mistakes_name_what_was_asked(suite_repo, conf, tmp_path) -> None:
    with pytest.raises(UsageError, match="has no tag, branch or commit 'nope'") as bad_ref:
        resolve(f"git+{suite_repo['path']}@nope", conf)
    assert "branches: main" in str(bad_ref.value.hint)
    with pytest.raises(UsageError, match=r"has no folder 'suite'") as no_folder:
        resolve(f"git+{suite_repo['path']}@v1#suite", conf)
    assert "tasks/" in str(no_folder.value.hint)
    with pytest.raises(UsageError, match=r"cannot fetch .*/nowhere .* never resolved"):
        resolve(f"git+file://{tmp_path}/nowhere@v1", conf)


def test_a_changed_checkout_is_refused_naming_it_and_how_to_clear_it(suite_repo, conf) -> None:
    folder = resolve(f"git+{suite_repo['path']}@v1#tasks", conf).folder
    (folder / TASKS[0] / "task.yaml").write_text("id: edited by hand\n")
    with pytest.raises(UsageError, match="has local changes") as refused:
        resolve(f"git+{suite_repo['path']}@v1#tasks", conf)
    checkout = folder.parent
    assert str(checkout) in str(refused.value) and f"rm -rf {checkout}" in str(refused.value.hint)
    shutil.rmtree(checkout)
    assert resolve(f"git+{suite_repo['path']}@v1#tasks", conf).folder == folder


def test_two_runs_resolving_at_once_share_one_sound_checkout(suite_repo, tmp_path) -> None:
    code = (
        "import sys; from evalrun.config.schema import TasksRefConf; "
        "from evalrun.tasks.remote import resolve; "
        f"print(resolve(sys.argv[1], TasksRefConf(cache_dir={str(tmp_path / 'c')!r})).folder)"
    )
    reference = f"git+file://{suite_repo['path']}@v2#tasks"
    racers = [
        subprocess.Popen([sys.executable, "-c", code, reference], stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    folders = {racer.communicate(timeout=120)[0].strip() for racer in racers}
    assert all(racer.returncode == 0 for racer in racers)
    assert len(folders) == 1
    checkout = Path(folders.pop()).parent
    assert sh("status", "--porcelain", cwd=checkout) == ""
    assert sh("rev-parse", "HEAD", cwd=checkout) == suite_repo["v2"]
    assert not [p for p in checkout.parent.iterdir() if p.name.startswith(".")]


@pytest.fixture
def http_origin(suite_repo: dict[str, str], tmp_path: Path) -> Iterator[str]:
    """The origin served as a bare repository over git's HTTP protocol on 127.0.0.1."""
    served = tmp_path / "http"
    subprocess.run(
        ["git", "clone", "--quiet", "--bare", suite_repo["path"], str(served / "origin.git")],
        check=True,
    )
    sh("update-server-info", cwd=served / "origin.git")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/origin.git"
    finally:
        server.shutdown()


def test_a_repository_over_http_resolves_like_a_local_one(http_origin, suite_repo, conf) -> None:
    resolved = resolve(f"git+{http_origin}@v1#tasks", conf)
    assert resolved.source.checkouts[0].url == http_origin
    assert resolved.source.checkouts[0].commit == suite_repo["v1"]
    assert [t.id for t in load_suite(resolved.folder)] == list(TASKS)


# --- Harbor's registry -------------------------------------------------------------------------
def test_a_registry_dataset_resolves_to_its_tasks_at_their_commits(
    suite_repo, conf, tmp_path
) -> None:
    write_registry(Path(conf.registry), f"file://{suite_repo['path']}", suite_repo["v1"])
    resolved = resolve("mysuite@1.0", conf)
    assert [t.id for t in load_suite(resolved.folder)] == list(TASKS)
    assert resolved.source.registry == "mysuite@1.0"
    assert resolved.source.registry_file == conf.registry
    assert [c.commit for c in resolved.source.checkouts] == [suite_repo["v1"]]
    assert "# v2" not in (resolved.folder / TASKS[0] / "task.yaml").read_text()
    Path(suite_repo["path"]).rename(tmp_path / "moved")  # a pinned commit needs no network again
    assert resolve("mysuite@1.0", conf).folder == resolved.folder


def test_a_registry_over_http_is_read_and_its_cached_copy_stands_in(
    suite_repo, conf, tmp_path
) -> None:
    served = tmp_path / "site"
    served.mkdir()
    write_registry(served / "registry.json", f"file://{suite_repo['path']}", suite_repo["v1"])
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    remote = TasksRefConf(
        registry=f"http://127.0.0.1:{server.server_address[1]}/registry.json",
        cache_dir=conf.cache_dir,
    )
    try:
        first = resolve("mysuite@0.9", remote)
    finally:
        server.shutdown()
        server.server_close()
    again = resolve("mysuite@0.9", remote)
    assert again.folder == first.folder
    assert again.notes and "using its copy from the cache" in again.notes[0]


def test_registry_mistakes_name_the_datasets_and_versions_there_are(suite_repo, conf) -> None:
    write_registry(Path(conf.registry), f"file://{suite_repo['path']}", suite_repo["v1"])
    with pytest.raises(UsageError, match=r"no dataset 'mysuit' .*did you mean mysuite") as name:
        resolve("mysuit@1.0", conf)
    assert name.value.hint == "its datasets: mysuite"
    with pytest.raises(UsageError, match=r"no version '2\.0' of mysuite") as version:
        resolve("mysuite@2.0", conf)
    assert version.value.hint == "its versions: 0.9, 1.0"
    Path(conf.registry).write_text('[{"name": "x", "version": "1"}]')
    with pytest.raises(UsageError, match=r"dataset \[0\] field 'tasks'"):
        resolve("x@1", conf)


# --- what a tasks_dir value names ------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "url", "ref", "subdir"),
    [
        ("git+https://host/org/repo.git@v2.0#tasks", "https://host/org/repo.git", "v2.0", "tasks"),
        ("git+ssh://git@host/org/repo", "ssh://git@host/org/repo", None, ""),
        ("git+git@host:org/repo.git@main#a/b", "git@host:org/repo.git", "main", "a/b"),
        ("git+file:///srv/repo@feature/x", "file:///srv/repo", "feature/x", ""),
    ],
)
def test_a_git_reference_splits_into_url_ref_and_folder(value, url, ref, subdir) -> None:
    assert parse(value) == GitReference(value, url, ref, subdir)


def test_name_at_version_is_a_dataset_unless_such_a_folder_exists(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert parse("terminal-bench@2.0") == RegistryReference(
        "terminal-bench@2.0", "terminal-bench", "2.0"
    )
    (tmp_path / "terminal-bench@2.0").mkdir()
    assert parse("terminal-bench@2.0") is None
    with pytest.raises(UsageError, match="must stay inside the repo"):
        parse("git+file:///srv/repo@v1#../..")


def test_resuming_after_the_branch_moved_is_refused_naming_both_commits(
    suite_repo: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    run_dir = tmp_path / "run"
    url = f"file://{suite_repo['path']}"
    first = evalrun(f"tasks_dir=git+{url}@main#tasks", "ids=[001-fizzbuzz-off-by-one]",
                    f"run_dir={run_dir}")  # fmt: skip
    assert first.returncode == 0, first.stderr
    sh("reset", "--quiet", "--hard", "v1", cwd=Path(suite_repo["path"]))  # main moves back
    resumed = evalrun(f"resume={run_dir}")
    assert resumed.returncode == 2
    assert f"commit {url}#tasks: '{suite_repo['v2']}' -> '{suite_repo['v1']}'" in resumed.stderr


def test_new_task_will_not_write_into_the_cache(tmp_path: Path) -> None:
    done = evalrun("new-task", "003-x", "tasks_dir=git+file:///srv/suite@v1#tasks", cwd=tmp_path)
    assert done.returncode == 2
    assert "new-task needs a folder of your own" in done.stderr
    assert not list(tmp_path.iterdir())
