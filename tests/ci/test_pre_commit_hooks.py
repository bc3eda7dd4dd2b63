"""`.pre-commit-hooks.yaml` is a valid manifest, and its hook really runs `runner validate` under pre-commit."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MANIFEST = REPO / ".pre-commit-hooks.yaml"


def hooks() -> dict[str, dict]:
    from pre_commit.clientlib import load_manifest

    return {hook["id"]: hook for hook in load_manifest(str(MANIFEST))}


def test_manifest_is_valid_and_both_hooks_match_declarations_only():
    found = hooks()
    assert set(found) == {"runner-validate", "runner-validate-system"}
    for hook in found.values():
        assert hook["entry"] == "runner validate" and hook["pass_filenames"] is False
        pattern = re.compile(hook["files"])
        for path in ("project.yml", "tables/orders.yml", "tables/sales/events.yaml"):
            assert pattern.search(path), path
        for path in ("README.md", "runner/cli.py", "warehouse/orders/.hoodie/hoodie.properties", "x/tables/a.yml"):
            assert not pattern.search(path), path


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t"})


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_hook_fails_a_bad_declaration_and_passes_a_good_one(tmp_path):
    # The hook repository as pre-commit sees it: a git repo with the manifest committed. A
    # `language: system` hook needs nothing else from it; `runner` comes from PATH (this venv).
    hook_repo = tmp_path / "hook-repo"
    hook_repo.mkdir()
    shutil.copy(MANIFEST, hook_repo / MANIFEST.name)
    git(hook_repo, "init", "-q")
    git(hook_repo, "add", "-A")
    git(hook_repo, "commit", "-qm", "hooks")
    project = tmp_path / "proj"
    shutil.copytree(REPO / "tables", project / "tables")
    shutil.copy(REPO / "project.yml", project / "project.yml")
    git(project, "init", "-q")
    orders = project / "tables" / "orders.yml"
    orders.write_text(orders.read_text().replace("commits_retained: 3", "commits_retained: 0"))
    git(project, "add", "-A")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    command = [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), "runner-validate-system",
               "--files", "tables/orders.yml"]
    failed = subprocess.run(command, cwd=project, env=env, check=False, capture_output=True, text=True, timeout=300)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "tables/orders.yml" in failed.stdout and "clean.commits_retained" in failed.stdout
    orders.write_text(orders.read_text().replace("commits_retained: 0", "commits_retained: 3"))
    git(project, "add", "-A")
    passed = subprocess.run(command, cwd=project, env=env, check=False, capture_output=True, text=True, timeout=300)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout
