"""`runner import`: real tables (hudi-rs fixtures unzipped into tmp_path, TableBuilder tables) found
under nested folders, declared once, never overwritten, and accepted by `validate`, `status` and
`plan`. hudi-rs reads each table's keys and partition fields independently of the runner."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hudi import HudiTable

from runner.cli import main
from runner.declarations.loader import load_project
from runner.declarations.model import CleanPolicyName
from runner.testing import TableBuilder
from tests.conftest import FIXTURES, extract_fixture, fixture_id, fixture_zips
from tests.s3 import S3Server, upload_tree

V6_PLAIN = "sample_table/cow/v6_nonpartitioned"
V9_COW = "sample_table/cow/v9_txns_simple_nometa"
V9_MOR = "sample_table/mor/avro/v9_txns_simple_meta"


def unzip(name: str, folder: Path) -> Path:
    """A private copy of one fixture table inside `folder`; the table keeps its own folder name."""
    folder.mkdir(parents=True, exist_ok=True)
    return extract_fixture(FIXTURES / f"{name}.zip", folder)


def new_project(root: Path, extra: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "project.yml").write_text("name: lake\n" + extra)
    return root


def digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main([*argv, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    """Three tables at different depths, one hidden and one inside another table (neither is found)."""
    root = tmp_path / "lake"
    unzip(V6_PLAIN, root / "sales")
    unzip(V9_COW, root / "finance" / "2026")
    orders = TableBuilder(root / "finance" / "orders", name="orders", partitions=["region=eu", "region=us"])
    orders.commit(writes=1)
    TableBuilder(root / ".trash" / "old", name="old").commit(writes=1)
    TableBuilder(root / "sales" / "v6_nonpartitioned" / "inner", name="inner").commit(writes=1)
    (root / "notes").mkdir()
    (root / "notes" / "readme.txt").write_text("not a table")
    return root


def test_imports_every_table_in_nested_folders_with_its_table_block(lake, tmp_path, capsys):
    project = new_project(tmp_path / "project")
    code, out, err = run(capsys, "import", str(lake), "--project-dir", str(project))

    assert (code, err) == (0, "")
    written = sorted(p.name for p in (project / "tables").iterdir())
    assert written == ["orders.yml", "v6_nonpartitioned.yml", "v9_txns_cow_simple_nometa.yml"]
    assert "Import: 3 written, 0 already declared, 0 failed." in out
    assert out.rstrip().splitlines()[-1].startswith("Next: ")
    assert "`runner validate --project-dir" in out and "`runner plan --project-dir" in out
    loaded = {t.name: t for t in load_project(project).tables}
    expected_paths = {"orders": lake / "finance" / "orders", "v6_nonpartitioned": lake / "sales" / "v6_nonpartitioned",
                      "v9_txns_cow_simple_nometa": lake / "finance" / "2026" / "v9_txns_simple_nometa"}
    assert {name: Path(t.path) for name, t in loaded.items()} == expected_paths
    for name, decl in loaded.items():
        oracle = HudiTable(str(expected_paths[name]))  # hudi-rs reads hoodie.properties its own way
        options = oracle.hudi_options()
        assert decl.table is not None
        assert decl.table.type.value == options["hoodie.table.type"]
        assert ",".join(decl.table.record_key) == options["hoodie.table.recordkey.fields"]
        assert list(decl.table.partition_by) == oracle.get_partition_schema().names
        # Nothing set that the table does not record: Hudi's defaults apply (this project has no
        # defaults of its own), and no file sizing, so apply never rewrites an imported table's files.
        assert (decl.clean.policy, decl.clean.commits_retained) == (CleanPolicyName.KEEP_LATEST_COMMITS, 10)
        assert not decl.file_sizing_declared
    text = (project / "tables" / "orders.yml").read_text()
    assert text.startswith("# yaml-language-server: $schema=../schemas/table.schema.json\n")
    assert "\n# clean:\n#   policy: KEEP_LATEST_COMMITS\n#   commits_retained: 10\n" in text
    assert "\n# file_sizing:\n#   max_file_size: 120MiB\n" in text
    assert loaded["v6_nonpartitioned"].table.precombine_field == "longField"
    assert loaded["v9_txns_cow_simple_nometa"].table.precombine_field == "txn_ts"  # hoodie.table.ordering.fields


def test_an_imported_table_takes_the_projects_defaults_until_its_file_sets_its_own(lake, tmp_path, capsys):
    project = new_project(tmp_path / "project", "defaults:\n  clean: {commits_retained: 3}\n"
                                                "  file_sizing: {max_file_size: 64MiB, small_file_limit: 10MiB}\n")
    assert run(capsys, "import", str(lake / "finance" / "orders"), "--project-dir", str(project))[0] == 0

    (decl,) = load_project(project).tables
    assert (decl.clean.policy, decl.clean.commits_retained) == (CleanPolicyName.KEEP_LATEST_COMMITS, 3)
    assert decl.file_sizing_declared
    assert (decl.file_sizing.max_file_size, decl.file_sizing.small_file_limit) == (64 * 1024 * 1024, 10 * 1024 * 1024)


def test_validate_status_and_plan_accept_the_imported_project(lake, tmp_path, capsys):
    project = new_project(tmp_path / "project")
    assert run(capsys, "import", str(lake), "--project-dir", str(project))[0] == 0

    assert run(capsys, "validate", "--project-dir", str(project))[0] == 0
    code, status = run_json(capsys, "status", "--project-dir", str(project))
    assert code == 0
    assert [row["declaration_drift"] for row in status["tables"]] == [[], [], []]
    code, plan = run_json(capsys, "plan", "--project-dir", str(project))
    assert code in (0, 2), plan
    assert {t["status"] for t in plan["tables"]} <= {"in_sync", "changes"}


def test_a_second_import_writes_nothing_and_exits_0(lake, tmp_path, capsys):
    project = new_project(tmp_path / "project")
    assert run(capsys, "import", str(lake), "--project-dir", str(project))[0] == 0
    before = digest(project)

    code, data = run_json(capsys, "import", str(lake), "--project-dir", str(project))

    assert code == 0
    assert digest(project) == before
    assert [t["status"] for t in data["tables"]] == ["already_declared"] * 3
    assert data["summary"]["written"] == 0 and data["summary"]["already_declared"] == 3


def test_a_table_declared_under_another_name_and_spelling_is_left_alone(lake, tmp_path, capsys):
    project = new_project(tmp_path / "project")
    (project / "tables").mkdir()
    orders = lake / "finance" / "orders"
    (project / "link").symlink_to(lake / "finance")
    legacy = "name: legacy\npath: link/./orders/\n"  # the same folder, through a link and another spelling
    (project / "tables" / "legacy.yml").write_text(legacy)

    code, out, _ = run(capsys, "import", str(orders), "--project-dir", str(project))

    assert code == 0
    assert sorted(os.listdir(project / "tables")) == ["legacy.yml"]
    assert (project / "tables" / "legacy.yml").read_text() == legacy
    assert f"= legacy ({orders}): already declared in {project}/tables/legacy.yml; left as it is" in out
    assert "Import: 0 written, 1 already declared, 0 failed." in out


def test_shared_names_and_taken_file_names_get_a_suffix_and_nothing_is_overwritten(tmp_path, capsys):
    lake = tmp_path / "lake"
    for region in ("eu", "us"):
        TableBuilder(lake / region / "orders", name="Sales.Orders", seed=len(region)).commit(writes=1)
    project = new_project(tmp_path / "project")
    (project / "tables").mkdir()
    # A file already named like the first choice, declaring something else entirely.
    taken = "name: legacy\npath: /elsewhere/orders\n"
    (project / "tables" / "sales_orders.yml").write_text(taken)

    code, out, _ = run(capsys, "import", str(lake), "--project-dir", str(project), "--max-depth", "2")

    assert code == 0
    assert (project / "tables" / "sales_orders.yml").read_text() == taken
    loaded = {t.name: t.path for t in load_project(project).tables}
    assert loaded == {"legacy": "/elsewhere/orders", "sales_orders_2": str(lake / "eu" / "orders"),
                      "sales_orders_3": str(lake / "us" / "orders")}
    assert 'named sales_orders_2: hoodie.table.name is "Sales.Orders"' in out
    assert 'named sales_orders_3: hoodie.table.name is "Sales.Orders"' in out


def test_dry_run_prints_the_files_and_writes_nothing(lake, tmp_path, capsys):
    project = new_project(tmp_path / "project")
    before = digest(project)

    code, out, _ = run(capsys, "import", str(lake / "finance"), "--project-dir", str(project), "--dry-run")

    assert code == 0
    assert digest(project) == before and not (project / "tables").exists()
    assert "Import: 2 to write, 0 already declared, 0 failed; nothing was written (--dry-run)." in out
    assert f"+ orders ({lake}/finance/orders): would write {project}/tables/orders.yml" in out
    printed = [line[len("    | "):] if line.startswith("    | ") else "" for line in out.splitlines()
               if line.startswith("    |")]
    # What the dry run shows is exactly what a real import then writes.
    assert run(capsys, "import", str(lake / "finance"), "--project-dir", str(project))[0] == 0
    written = (project / "tables" / "v9_txns_cow_simple_nometa.yml").read_text().splitlines()
    written += (project / "tables" / "orders.yml").read_text().splitlines()
    assert sorted(printed) == sorted(written)
    code, data = run_json(capsys, "import", str(lake / "finance"), "--project-dir", str(project), "--dry-run")
    assert code == 0 and [t["status"] for t in data["tables"]] == ["already_declared"] * 2


def test_json_carries_each_declaration_written(lake, tmp_path, capsys):
    project = new_project(tmp_path / "project")

    code, data = run_json(capsys, "import", str(lake / "finance" / "orders"), "--project-dir", str(project),
                          "--dry-run")

    assert code == 0 and data["dry_run"] is True
    (row,) = data["tables"]
    assert (row["status"], row["name"], row["file"]) == ("would_write", "orders", "tables/orders.yml")
    assert run(capsys, "import", str(lake / "finance" / "orders"), "--project-dir", str(project))[0] == 0
    # "file" is relative to the project folder the JSON names, whatever folder the command ran in.
    written = os.path.join(data["project_directory"], row["file"])
    assert os.path.isabs(written) and open(written).read() == row["declaration"]


def test_a_table_inside_the_project_gets_a_relative_path(tmp_path, capsys, monkeypatch):
    project = new_project(tmp_path / "project")
    unzip(V6_PLAIN, project / "warehouse")
    monkeypatch.chdir(project)

    code, out, _ = run(capsys, "import", "warehouse")

    assert code == 0
    assert "+ v6_nonpartitioned (" in out and "wrote tables/v6_nonpartitioned.yml" in out
    assert "\npath: warehouse/v6_nonpartitioned\n" in (project / "tables" / "v6_nonpartitioned.yml").read_text()
    assert "Next: set each new table's retention and file sizes to what its writers use, check with " \
           "`runner validate`, then see what apply would do with `runner plan`." in out


def test_missing_paths_plain_folders_and_broken_tables_fail_by_name_while_the_rest_is_imported(tmp_path, capsys):
    lake = tmp_path / "lake"
    good = unzip(V6_PLAIN, lake / "good")
    no_name = unzip(V9_COW, lake / "broken")  # hoodie.properties without hoodie.table.name
    properties = no_name / ".hoodie" / "hoodie.properties"
    properties.write_text("\n".join(line for line in properties.read_text().splitlines()
                                    if not line.startswith("hoodie.table.name=")))
    lost = tmp_path / "lost"  # a .hoodie folder whose hoodie.properties is gone
    (lost / ".hoodie").mkdir(parents=True)
    plain = tmp_path / "plain"
    (plain / "data").mkdir(parents=True)
    project = new_project(tmp_path / "project")

    code, out, err = run(capsys, "import", str(lake), str(tmp_path / "missing"), str(plain), str(lost),
                         "--project-dir", str(project))

    assert code == 1 and err == ""
    assert "Traceback" not in out
    assert sorted(os.listdir(project / "tables")) == ["v6_nonpartitioned.yml"]
    assert f"+ v6_nonpartitioned ({good}): wrote" in out
    assert (f"! {no_name}/.hoodie/hoodie.properties: required property hoodie.table.name is missing or empty"
            in out)
    assert f"! {tmp_path}/missing: not found (looked for {tmp_path}/missing); nothing was imported from it" in out
    assert (f"! {plain}: no Hudi table (a folder holding .hoodie/hoodie.properties) found in {plain}, "
            "2 folders searched") in out
    assert f"! {lost}/.hoodie/hoodie.properties is missing, so the table's type and version are unknown" in out
    assert "Import: 1 written, 0 already declared, 4 failed." in out
    assert "Next: fix what is marked ! and run `runner import` again" in out
    code, data = run_json(capsys, "import", str(tmp_path / "missing"), "--project-dir", str(project))
    assert code == 1
    assert data["tables"][0]["status"] == "failed"
    assert data["tables"][0]["error"]["type"] == "StorageError"


def test_an_unsupported_table_version_is_not_imported(tmp_path, capsys):
    table = unzip(V6_PLAIN, tmp_path / "lake")
    properties = table / ".hoodie" / "hoodie.properties"
    properties.write_text(properties.read_text().replace("hoodie.table.version=6", "hoodie.table.version=5"))
    project = new_project(tmp_path / "project")

    code, out, _ = run(capsys, "import", str(table), "--project-dir", str(project))

    assert code == 1 and not (project / "tables").exists()
    assert f"! {table}/.hoodie/hoodie.properties: hoodie.table.version is 5; the runner supports" in out


def test_a_declaration_validate_would_refuse_is_not_written(lake, tmp_path, capsys):
    project = new_project(tmp_path / "project", "allowed_roots: [warehouse]\n")

    code, out, _ = run(capsys, "import", str(lake / "finance" / "orders"), "--project-dir", str(project))

    assert code == 1
    assert not (project / "tables").exists() or not os.listdir(project / "tables")
    assert f"! {lake}/finance/orders: 1 problem in the declarations:" in out
    assert "tables/orders.yml:5:1: path: resolves to" in out and "outside the allowed roots" in out


def test_an_invalid_project_is_reported_before_anything_is_searched(lake, tmp_path, capsys):
    project = new_project(tmp_path / "project")
    (project / "tables").mkdir()
    (project / "tables" / "bad.yml").write_text("name: Bad\npath: x\n")

    code, out, err = run(capsys, "import", str(lake), "--project-dir", str(project))

    assert code == 1 and out == ""
    assert "tables/bad.yml:1:1: name: expected a lowercase letter" in err
    assert os.listdir(project / "tables") == ["bad.yml"]


def test_max_depth_bounds_the_search_and_says_what_it_left(lake, tmp_path, capsys):
    project = new_project(tmp_path / "project")

    code, out, _ = run(capsys, "import", str(lake), "--project-dir", str(project), "--max-depth", "2")

    assert code == 0
    assert sorted(os.listdir(project / "tables")) == ["orders.yml", "v6_nonpartitioned.yml"]
    code, out, _ = run(capsys, "import", str(lake / "finance"), "--project-dir", str(project), "--max-depth", "0")
    assert code == 1
    assert "found in" in out and "1 folder searched; 2 folders deeper than --max-depth 0 were not searched" in out


def test_the_policy_of_the_latest_clean_is_used_and_its_retention_left_unset(tmp_path, capsys, spark):
    table = tmp_path / "lake" / "events"
    builder = TableBuilder(table, name="events", partitions=["day=1"])
    builder.commit(writes=2)
    builder.commit(updates=2)
    builder.commit(updates=2)
    first = new_project(tmp_path / "first")
    (first / "tables").mkdir()
    (first / "tables" / "events.yml").write_text(
        f"name: events\npath: {table}\nclean: {{policy: KEEP_LATEST_FILE_VERSIONS, file_versions_retained: 1}}\n")
    assert run(capsys, "apply", "--auto-approve", "--project-dir", str(first))[0] == 0  # writes a real clean
    second = new_project(tmp_path / "second")

    code, out, _ = run(capsys, "import", str(table), "--project-dir", str(second))

    assert code == 0
    requested = next(p for p in (table / ".hoodie").iterdir() if p.name.endswith(".clean.requested"))
    assert f"clean policy KEEP_LATEST_FILE_VERSIONS, from the latest completed clean (.hoodie/{requested.name})" in out
    (decl,) = load_project(second).tables
    assert decl.clean.policy is CleanPolicyName.KEEP_LATEST_FILE_VERSIONS
    assert dict(decl.provenance)["clean.file_versions_retained"].value == "hudi default"  # not guessed
    text = (second / "tables" / "events.yml").read_text()
    assert "file_versions_retained" not in text.split("policy:")[1]
    assert "not recorded on the timeline" in text


def test_import_loads_no_spark(lake, tmp_path):
    project = new_project(tmp_path / "project")
    check = (
        "import sys\n"
        "from runner.cli import main\n"
        f"code = main(['import', {str(lake)!r}, '--project-dir', {str(project)!r}])\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j'))\n"
        "assert not loaded, loaded\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


@pytest.mark.s3
def test_tables_under_an_s3_prefix_are_found_and_declared_by_uri(tmp_path, capsys, monkeypatch,
                                                                 s3_server: S3Server, s3_bucket: str):
    local = tmp_path / "local"
    upload_tree(unzip(V6_PLAIN, local / "a"), s3_bucket, "lake/sales/v6_nonpartitioned", s3_server)
    upload_tree(unzip(V9_COW, local / "b"), s3_bucket, "lake/finance/2026/v9_txns_simple_nometa", s3_server)
    for shadowing in ("AWS_ENDPOINT_URL_S3", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(shadowing, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint_url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
    monkeypatch.setenv("AWS_REGION", s3_server.region)
    project = new_project(tmp_path / "project")

    code, out, _ = run(capsys, "import", f"s3://{s3_bucket}/lake", "--project-dir", str(project))

    assert code == 0, out
    loaded = {t.name: t.path for t in load_project(project).tables}
    assert loaded == {"v6_nonpartitioned": f"s3://{s3_bucket}/lake/sales/v6_nonpartitioned",
                      "v9_txns_cow_simple_nometa": f"s3://{s3_bucket}/lake/finance/2026/v9_txns_simple_nometa"}
    code, plan = run_json(capsys, "plan", "--project-dir", str(project))
    assert code in (0, 2), plan
    assert run(capsys, "import", f"s3://{s3_bucket}/lake", "--project-dir", str(project))[0] == 0
    assert sorted(os.listdir(project / "tables")) == ["v6_nonpartitioned.yml", "v9_txns_cow_simple_nometa.yml"]


def test_help_shows_examples_and_the_exit_status(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["import", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "examples:\n  runner import warehouse/orders" in out
    assert "--dry-run" in out and "--max-depth N" in out
    assert "exit status: 0 every table found is now declared" in out


def test_every_fixture_table_imports_without_drift_and_plans(tmp_path, capsys):
    """All 47 hudi-rs tables (versions 6, 8 and 9, COW and MOR, metadata tables, LANCE base files)."""
    lake = tmp_path / "lake"
    for zip_path in fixture_zips():
        unzip(fixture_id(zip_path), lake / fixture_id(zip_path))
    project = new_project(tmp_path / "project")

    code, data = run_json(capsys, "import", str(lake), "--project-dir", str(project))

    assert code == 0
    assert data["summary"]["written"] == len(fixture_zips()) == 47
    code, status = run_json(capsys, "status", "--project-dir", str(project))
    assert code == 0
    assert [t["name"] for t in status["tables"] if t["declaration_drift"]] == []
    code, plan = run_json(capsys, "plan", "--project-dir", str(project))
    assert code in (0, 2)
    assert [t["name"] for t in plan["tables"] if t["status"] not in ("in_sync", "changes")] == []


def test_a_declaration_the_disk_refuses_is_reported_by_table(lake, tmp_path, capsys):
    # A tables folder nothing can be created in (immutable: even root is refused). A file where the
    # folder goes, which this test used, is now refused up front (the test after the next one).
    project = new_project(tmp_path / "project")
    (project / "tables").mkdir()
    if subprocess.run(["chattr", "+i", str(project / "tables")], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here to make a folder refuse writes")
    try:
        code, out, err = run(capsys, "import", str(lake / "finance" / "orders"), "--project-dir", str(project))
    finally:
        subprocess.run(["chattr", "-i", str(project / "tables")], check=True)

    assert (code, err) == (1, "")
    assert f"! {lake}/finance/orders: cannot write its declaration: " in out
    assert "Operation not permitted" in out or "Permission denied" in out, out
    assert "Import: 0 written, 0 already declared, 1 failed." in out


def test_ctrl_c_leaves_whole_files_and_the_next_import_finishes(lake, tmp_path, capsys, monkeypatch):
    import runner.commands.import_tables as import_command

    project = new_project(tmp_path / "project")
    real, calls = import_command._write, []

    def interrupted_at_the_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            signal.raise_signal(signal.SIGINT)  # Python's own handler: KeyboardInterrupt right here
        return real(*args, **kwargs)

    monkeypatch.setattr(import_command, "_write", interrupted_at_the_second)
    assert main(["import", str(lake), "--project-dir", str(project)]) == 1
    assert capsys.readouterr().err == ("error: interrupted; each declaration import wrote is complete, the rest were "
                                       "not written\nTo fix this, run `runner import` again: it skips the tables "
                                       "declared already.\n")
    assert len(os.listdir(project / "tables")) == 1  # whole, and no temporary file left
    monkeypatch.setattr(import_command, "_write", real)

    code, out, _ = run(capsys, "import", str(lake), "--project-dir", str(project))

    assert code == 0 and "Import: 2 written, 1 already declared, 0 failed." in out
    assert run(capsys, "validate", "--project-dir", str(project))[0] == 0


def test_a_folder_that_cannot_be_listed_is_reported_and_the_search_goes_on(lake, tmp_path, capsys):
    (lake / "broken").mkdir()
    (lake / "broken" / "loop").symlink_to("loop")  # listing `broken` stats it: too many levels of links
    project = new_project(tmp_path / "project")

    code, out, _ = run(capsys, "import", str(lake), "--project-dir", str(project))

    assert code == 1
    assert f"! Cannot stat {lake}/broken/loop: " in out
    assert "Import: 3 written, 0 already declared, 1 failed." in out


# --- names outside ASCII: shown as written, read back as written -----------------------------------

NON_ASCII = "Café.Commände"


def _non_ascii_table(lake: Path) -> Path:
    """A fixture table whose hoodie.table.name is not ASCII, in a folder whose name is not either;
    hoodie.properties spells it as Java's Properties.store writes it (`\\u00e9`)."""
    table = unzip(V6_PLAIN, lake).rename(lake / "commandes_été")
    props = table / ".hoodie" / "hoodie.properties"
    escaped = NON_ASCII.encode("ascii", "backslashreplace").decode().replace("\\x", "\\u00")
    lines = [f"hoodie.table.name={escaped}" if line.startswith("hoodie.table.name=") else line
             for line in props.read_text().splitlines()]
    props.write_text("\n".join(lines) + "\n")
    return table


def _import_process(project: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run([sys.executable, "-m", "runner", "import", *argv, "--project-dir", str(project)],
                          capture_output=True, text=True, encoding="utf-8", env=env, timeout=120)


def test_a_non_ascii_table_name_is_shown_and_written_as_it_is(tmp_path: Path) -> None:
    project = new_project(tmp_path / "p")
    table = _non_ascii_table(tmp_path / "lake")

    done = _import_process(project, str(tmp_path / "lake"))

    assert done.returncode == 0, done.stdout + done.stderr
    assert "\\u" not in done.stdout and "\\x" not in done.stdout, done.stdout
    assert f'hoodie.table.name is "{NON_ASCII}"' in done.stdout, done.stdout
    assert "+ cafe_commande " in done.stdout  # accents folded into the name, not dropped
    text = (project / "tables" / "cafe_commande.yml").read_text(encoding="utf-8")
    assert f'(hoodie.table.name: "{NON_ASCII}")' in text and "\\u" not in text
    decl, = load_project(project).tables  # the YAML reads back: same name, same table
    assert decl.name == "cafe_commande" and Path(decl.path) == table
    again = _import_process(project, str(tmp_path / "lake"))
    assert again.returncode == 0 and f"already declared in {project / 'tables' / 'cafe_commande.yml'}" in again.stdout


def test_json_output_shows_a_non_ascii_path_as_written(tmp_path: Path) -> None:
    project = new_project(tmp_path / "p")
    _non_ascii_table(tmp_path / "lake")

    done = _import_process(project, str(tmp_path / "lake"), "--dry-run", "--format", "json")

    assert done.returncode == 0, done.stderr
    assert "commandes_été" in done.stdout and "\\u00e9" not in done.stdout
    assert json.loads(done.stdout)["tables"][0]["path"].endswith("commandes_été")


def test_a_terminal_that_cannot_show_the_name_gets_escapes_not_a_crash(tmp_path: Path) -> None:
    project = new_project(tmp_path / "p")
    _non_ascii_table(tmp_path / "lake")
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}

    for fmt in ("text", "json"):
        done = subprocess.run([sys.executable, "-m", "runner", "import", str(tmp_path / "lake"), "--dry-run",
                               "--format", fmt, "--project-dir", str(project)],
                              capture_output=True, env=env, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        assert b"internal error" not in done.stderr and b"Traceback" not in done.stderr
        if fmt == "json":
            assert json.loads(done.stdout)["tables"][0]["path"].endswith("commandes_été")


def test_a_tables_folder_that_is_a_file_is_named_before_anything_is_written(tmp_path: Path) -> None:
    project = new_project(tmp_path / "p")
    (project / "tables").write_text("in the way\n")
    unzip(V6_PLAIN, tmp_path / "lake")
    done = subprocess.run([sys.executable, "-m", "runner", "import", str(tmp_path / "lake"), "--project-dir",
                           str(project)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert 'tables_dir: "tables" is a file in' in done.stdout + done.stderr, done.stdout + done.stderr
    assert "File exists" not in done.stdout + done.stderr
    assert (project / "tables").read_text() == "in the way\n"
