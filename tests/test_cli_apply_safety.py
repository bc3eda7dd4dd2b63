"""`runner apply` applies a reviewed plan, only where it was made, and never touches another table.

Real fixture tables on disk; the `hudi` reader is the oracle; confirmation is tested through a
pseudo-terminal, as a user at a terminal meets it.
"""

from __future__ import annotations

import hashlib
import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from runner.cli import main
from tests.conftest import FIXTURES, extract_fixture
from tests.execute.conftest import oracle_snapshot
from tests.plan_json import step

REPO = Path(__file__).resolve().parents[1]
OVERWRITE = FIXTURES / "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable.zip"
NONPARTITIONED = FIXTURES / "sample_table/cow/v6_nonpartitioned.zip"
T_YML = ("name: t\npath: table\nclean:\n  policy: KEEP_LATEST_FILE_VERSIONS\n  file_versions_retained: 1\n"
         "file_sizing:\n  small_file_limit: 0\n")


def make_project(root: Path, *, name: str = "cli", table_yml: str = T_YML) -> Path:
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text(f"name: {name}\n")
    (root / "tables" / "t.yml").write_text(table_yml)
    extract_fixture(OVERWRITE, root / "unzip").rename(root / "table")
    return root


def digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def saved_plan(root: Path, capsys: pytest.CaptureFixture[str], out: Path) -> dict:
    code, _, _ = cli(capsys, "plan", "--project-dir", str(root), "--out", str(out))
    assert code == 2
    return json.loads(out.read_text())


# --- item 8: the saved plan is what gets applied, only where it was made ---------------------------


def test_the_plan_records_its_project_and_each_declaration(tmp_path: Path, capsys) -> None:
    root = make_project(tmp_path / "p")
    data = saved_plan(root, capsys, tmp_path / "plan.json")
    jsonschema.validate(data, json.loads((REPO / "schemas" / "plan.schema.json").read_text()))
    assert data["project"] == {"name": "cli", "directory": os.path.realpath(root)}
    table = data["tables"][0]
    assert table["path"] == str(root / "table") and len(table["declaration_fingerprint"]) == 32
    (root / "tables" / "t.yml").write_text(T_YML + "description: labels do not change what is deleted\n")
    assert saved_plan(root, capsys, tmp_path / "again.json")["tables"][0]["declaration_fingerprint"] == \
        table["declaration_fingerprint"]


@pytest.mark.parametrize("spelling", [["--select", "t"], ["-s", "t"], ["--exclude", "nothing", "t"], ["--state"]])
def test_select_swallowing_the_plan_file_is_refused(spelling: list[str], tmp_path: Path, capsys) -> None:
    root = make_project(tmp_path / "p")
    plan_file = tmp_path / "plan.json"
    saved_plan(root, capsys, plan_file)
    before = digest(root / "table")
    code, _, err = cli(capsys, "apply", "--project-dir", str(root), *spelling, str(plan_file))
    assert code == 1
    option = next(o for o in ("--exclude", "--state", "--select") if o in spelling or o == "--select")
    assert f'error: {option} took "{plan_file}" as its value, but it looks like a plan file; ' \
           "nothing was applied" in err
    assert digest(root / "table") == before


def test_now_beside_a_saved_plan_is_refused_not_ignored(tmp_path: Path, capsys) -> None:
    root = make_project(tmp_path / "p")
    plan_file = tmp_path / "plan.json"
    saved_plan(root, capsys, plan_file)
    before = digest(root / "table")
    code, _, err = cli(capsys, "apply", str(plan_file), "--project-dir", str(root), "--now", "20990101000000")
    assert code == 1
    assert f"error: --now 20990101000000 cannot be combined with the saved plan {plan_file}" in err
    assert digest(root / "table") == before


def test_a_plan_made_in_another_project_is_refused(tmp_path: Path, capsys) -> None:
    first = make_project(tmp_path / "first")
    other = make_project(tmp_path / "other")  # same project name, same table name, another place
    plan_file = tmp_path / "plan.json"
    saved_plan(first, capsys, plan_file)
    before = digest(other)
    code, _, err = cli(capsys, "apply", "--auto-approve", "--project-dir", str(other), str(plan_file))
    assert code == 1
    assert (f'error: the plan was made in project "cli" at {os.path.realpath(first)}, but this is project '
            f'"cli" at {os.path.realpath(other)}; nothing was applied') in err
    assert digest(other) == before


@pytest.mark.parametrize(("edit", "message"), [
    ("policy", "the declaration of table t ({root}/tables/t.yml) changed since the plan was made"),
    ("path", "table t was planned at {root}/table but is declared at {root}/moved"),
])
def test_a_plan_for_a_changed_declaration_is_refused(edit: str, message: str, tmp_path: Path, capsys) -> None:
    root = make_project(tmp_path / "p")
    plan_file = tmp_path / "plan.json"
    saved_plan(root, capsys, plan_file)
    if edit == "policy":
        (root / "tables" / "t.yml").write_text(T_YML.replace("file_versions_retained: 1", "file_versions_retained: 2"))
    else:
        (root / "table").rename(root / "moved")
        (root / "tables" / "t.yml").write_text(T_YML.replace("path: table", "path: moved"))
    before = digest(root)
    code, _, err = cli(capsys, "apply", "--project-dir", str(root), str(plan_file))
    assert code == 1
    assert f"error: the plan no longer matches the declarations: {message.format(root=root)}; nothing was applied" \
        in err
    assert digest(root) == before


def test_a_plan_naming_an_undeclared_table_or_without_provenance_is_refused(tmp_path: Path, capsys) -> None:
    root = make_project(tmp_path / "p")
    plan_file = tmp_path / "plan.json"
    data = saved_plan(root, capsys, plan_file)
    before = digest(root)
    data["tables"][0]["name"] = "tt"
    plan_file.write_text(json.dumps(data))
    code, _, err = cli(capsys, "apply", "--project-dir", str(root), str(plan_file))
    assert code == 1
    assert 'error: the plan names table "tt" that project cli does not declare (did you mean "t"?)' in err
    data["tables"][0]["name"] = "t"
    del data["project"]
    plan_file.write_text(json.dumps(data))
    code, _, err = cli(capsys, "apply", "--project-dir", str(root), str(plan_file))
    assert code == 1 and "the plan file does not record the project it was made in" in err
    assert digest(root) == before


def _plan_of_t_beside_u(tmp_path: Path, capsys) -> tuple[Path, Path, dict[str, str]]:
    """A project of tables t and u, a plan file of t alone, and the project's digest."""
    root = make_project(tmp_path / "p")
    (root / "tables" / "u.yml").write_text("name: u\npath: elsewhere\n")
    plan_file = tmp_path / "plan.json"
    cli(capsys, "plan", "--project-dir", str(root), "-s", "t", "--out", str(plan_file))
    return root, plan_file, digest(root)


def test_selecting_a_table_the_plan_does_not_cover_is_an_error(tmp_path: Path, capsys) -> None:
    root, plan_file, before = _plan_of_t_beside_u(tmp_path, capsys)
    code, _, err = cli(capsys, "apply", "--project-dir", str(root), str(plan_file), "--select", "u")
    assert code == 1 and 'error: --select picks table "u" that the plan file does not cover' in err
    code, _, err = cli(capsys, "apply", "--project-dir", str(root), str(plan_file), "--select", "uu")
    assert code == 1 and 'error: --select "uu" matches no table (did you mean "u"?)' in err
    assert digest(root) == before


def test_excluding_every_table_of_the_plan_file_is_an_error(tmp_path: Path, capsys) -> None:
    # The project still has u, so the selection alone is not empty; what apply would apply is.
    root, plan_file, before = _plan_of_t_beside_u(tmp_path, capsys)
    code, out, err = cli(capsys, "apply", "--project-dir", str(root), str(plan_file), "--exclude", "t")
    assert code == 1, out
    assert err.startswith('error: no table is left: the plan file covers t, and --exclude "t" excludes it '
                          '(t by "t"); nothing was applied\nTo fix this, narrow --exclude'), err
    assert digest(root) == before and not (root / "target").exists()


# --- issue 12 item 2: confirmation, --auto-approve -------------------------------------------------


def test_apply_without_a_terminal_needs_a_plan_file_or_auto_approve(tmp_path: Path, capsys) -> None:
    root = make_project(tmp_path / "p")
    before = digest(root)
    code, _, err = cli(capsys, "apply", "--project-dir", str(root))
    assert code == 1
    assert "error: apply without a plan file asks for confirmation, which needs a terminal; nothing was applied" \
        in err and "--auto-approve" in err
    assert digest(root) == before


def run_in_terminal(argv: list[str], answer: str | None, timeout: float = 240.0) -> tuple[int, str]:
    """Run the CLI with a pseudo-terminal as stdin/stdout/stderr, answering the confirmation."""
    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen([sys.executable, "-m", "runner", *argv], stdin=follower, stdout=follower,
                               stderr=follower, cwd=REPO, env=env, close_fds=True)
    os.close(follower)
    output, answered = b"", False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: the process is done
                break
            if not chunk:
                break
            output += chunk
        if answer is not None and not answered and b"Enter a value:" in output:
            os.write(leader, answer.encode() + b"\n")
            answered = True
        if process.poll() is not None and not ready:
            break
    code = process.wait(timeout=max(1.0, deadline - time.monotonic()))
    os.close(leader)
    return code, output.decode(errors="replace").replace("\r\n", "\n")


def test_on_a_terminal_apply_shows_the_plan_and_anything_but_yes_cancels(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    before = digest(root)
    code, out = run_in_terminal(["apply", "--project-dir", str(root)], answer="y")
    assert code == 1, out
    assert "Plan: 1 to change" in out and "partition 10/" in out
    assert "Do you want to perform these actions? Only 'yes' will be accepted." in out
    assert "Apply cancelled (the answer was 'y'; only 'yes' applies); nothing was changed." in out
    assert digest(root) == before


@pytest.mark.spark  # `runner apply` starts Spark in a child process: no fixture says so
def test_on_a_terminal_yes_applies_the_plan_that_was_shown(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    rows = oracle_snapshot(root / "table")[1]
    code, out = run_in_terminal(["apply", "--project-dir", str(root)], answer="yes")
    assert code == 0, out
    report = json.loads((root / "target" / "run_results.json").read_text())
    assert report["tables"][0]["status"] == "success" and report["tables"][0]["files_deleted"] == 4
    assert oracle_snapshot(root / "table")[1] == rows
    code, out = run_in_terminal(["apply", "--project-dir", str(root)], answer=None)
    assert code == 0 and "in sync" in out and "Do you want" not in out  # nothing to confirm


# --- issue 8 item 1: a table inside another table's folder --------------------------------------


def nested_project(root: Path, sizing: str = "") -> Path:
    """An outer table declared in the project and, inside its folder, another Hudi table."""
    yml = "name: t\npath: table\nclean:\n  policy: KEEP_LATEST_FILE_VERSIONS\n  file_versions_retained: 1\n" + sizing
    make_project(root, table_yml=yml)
    extract_fixture(NONPARTITIONED, root / "unzip2").rename(root / "table" / "legacy")
    return root


def test_plan_never_treats_a_nested_table_as_a_partition(tmp_path: Path, capsys) -> None:
    # sizing declared with Hudi's defaults: small files would be rewritten
    root = nested_project(tmp_path / "p", sizing="file_sizing: {}\n")
    data = saved_plan(root, capsys, tmp_path / "plan.json")
    table = data["tables"][0]
    touched = [f["path"] for f in step(table, "clean")["files_to_delete"]]
    touched += [f["path"] for g in step(table, "resize")["groups"] for f in g["files"]]
    assert touched and not [p for p in touched if p.startswith("legacy")]
    assert "legacy" not in step(table, "clean")["partitions_to_delete"]


def test_incremental_listing_skips_a_partition_inside_a_nested_table(tmp_path: Path) -> None:
    from runner.hudi.state import read_table_state
    from runner.storage import storage_for

    root = nested_project(tmp_path / "p")
    state = read_table_state(storage_for(str(root / "table")), partitions=["legacy", "10"])
    assert state.partitions == ("10",)
    assert not [g for g in state.file_groups if g.partition.startswith("legacy")]


def test_applying_the_outer_table_leaves_the_inner_table_unchanged(tmp_path: Path, capsys, spark) -> None:
    root = nested_project(tmp_path / "p", sizing="file_sizing:\n  max_file_size: 10MiB\n  small_file_limit: 5MiB\n")
    inner = root / "table" / "legacy"
    inner_before, inner_files = oracle_snapshot(inner), digest(inner)
    outer_rows = oracle_snapshot(root / "table")[1]
    code, out, _ = cli(capsys, "apply", "--auto-approve", "--project-dir", str(root), "--format", "json")
    assert code == 0, out
    assert json.loads(out)["tables"][0]["files_deleted"] == 4
    assert oracle_snapshot(inner) == inner_before
    assert digest(inner) == inner_files
    assert _without_file_names(oracle_snapshot(root / "table")[1]) == _without_file_names(outer_rows)


def _without_file_names(rows: list[dict]) -> list[str]:
    # A rewrite moves rows to new files; what a reader sees must otherwise be the same.
    return sorted(repr(sorted((k, repr(v)) for k, v in r.items() if k != "_hoodie_file_name")) for r in rows)


@pytest.mark.s3
def test_on_object_storage_a_nested_table_is_never_a_partition(tmp_path: Path, s3_server, s3_bucket) -> None:
    from runner.hudi.state import read_table_state
    from runner.storage import storage_for
    from tests.s3 import upload_tree

    root = nested_project(tmp_path / "p")
    upload_tree(root / "table", s3_bucket, "warehouse/t", s3_server)
    storage = storage_for(f"s3://{s3_bucket}/warehouse/t", options=s3_server.options())
    full = read_table_state(storage)
    assert full.partitions == ("10", "20", "30")
    assert not [f for f in full.unrecognized_files if f.startswith("legacy")]
    assert read_table_state(storage, partitions=["legacy", "10"]).partitions == ("10",)


def test_select_with_an_explicit_value_keeps_the_plan_file_and_duplicates_are_refused(tmp_path: Path,
                                                                                       capsys) -> None:
    in_sync = "name: t\npath: table\nfile_sizing:\n  small_file_limit: 0\n"  # 10 commits kept: nothing to do
    root = make_project(tmp_path / "p", table_yml=in_sync)
    plan_file = tmp_path / "plan.json"
    assert cli(capsys, "plan", "--project-dir", str(root), "--out", str(plan_file))[0] == 0
    code, out, _ = cli(capsys, "apply", "--project-dir", str(root), "--select=t", str(plan_file), "--format", "json")
    assert code == 0 and [t["status"] for t in json.loads(out)["tables"]] == ["in_sync"]
    data = json.loads(plan_file.read_text())
    data["tables"] *= 2
    plan_file.write_text(json.dumps(data))
    code, _, err = cli(capsys, "apply", "--project-dir", str(root), str(plan_file))
    assert code == 1 and 'error: the plan lists table "t" more than once; nothing was applied' in err
    code, _, err = cli(capsys, "apply", "--project-dir", str(root), "")
    assert code == 1 and "error: the plan file argument is empty: expected the path of a file" in err


def test_on_a_terminal_a_blocked_report_path_is_refused_before_the_question(tmp_path: Path) -> None:
    """A file where target/ goes: refused before the plan is shown and `yes` asked for, not after."""
    root = make_project(tmp_path / "p")
    (root / "target").write_text("in the way\n")
    before = digest(root)
    code, out = run_in_terminal(["apply", "--project-dir", str(root)], answer="yes")
    assert code == 1, out
    assert "Enter a value:" not in out and f"{root / 'target'} is a file, but the run report needs a folder" in out
    assert digest(root) == before


def test_on_a_terminal_a_near_yes_is_named_in_the_cancellation(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    code, out = run_in_terminal(["apply", "--project-dir", str(root)], answer="Yes")
    assert code == 1, out
    assert "Apply cancelled (the answer was 'Yes'; only 'yes' applies); nothing was changed." in out, out
