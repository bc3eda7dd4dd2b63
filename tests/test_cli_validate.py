"""`runner validate` end to end: exit codes, text and JSON output, and no Spark on the way."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runner.cli import main

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the repository's example project, safe to break, as the current directory (so
    file names are shown relative to it; from elsewhere they are absolute: test_project_dir_paths)."""
    shutil.copy(REPO / "project.yml", tmp_path / "project.yml")
    shutil.copytree(REPO / "tables", tmp_path / "tables")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def validate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["validate", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_valid_project_exits_0_and_lists_the_tables(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = validate(capsys, "--project-dir", str(demo))
    assert code == 0
    assert out == ("project demo: declarations are valid (3 tables)\n"
                   "checked 3 tables:\n"
                   "  customers  tables/customers.yml\n"
                   "  events     tables/sales/events.yml\n"
                   "  orders     tables/orders.yml\n")


def test_breaking_an_example_exits_1_with_file_line_column(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    orders = demo / "tables" / "orders.yml"
    lines = orders.read_text().splitlines()
    number = next(i for i, line in enumerate(lines, 1) if "commits_retained:" in line)
    lines[number - 1] = "  commits_retained: 0"
    orders.write_text("\n".join(lines) + "\n")
    code, out, _ = validate(capsys, "--project-dir", str(demo))
    assert code == 1
    assert out == (f"tables/orders.yml:{number}:3: clean.commits_retained: must be >= 1, got 0\n"
                   "1 problem in 1 file; the declarations are invalid\n")


@pytest.mark.parametrize(("field", "value"), [("name", "orders"), ("path", "warehouse/orders")])
def test_a_value_ending_in_a_newline_is_refused(demo: Path, capsys: pytest.CaptureFixture[str],
                                              field: str, value: str) -> None:
    # Python's `$` matches before a final newline; JSON Schema's (ECMA-262) does not, and a table
    # path ending in a newline is not the folder its owner reviewed.
    orders = demo / "tables" / "orders.yml"
    lines = orders.read_text().splitlines()
    number = next(i for i, line in enumerate(lines, 1) if line.startswith(f"{field}:"))
    lines[number - 1] = f'{field}: "{value}\\n"'
    orders.write_text("\n".join(lines) + "\n")
    code, out, _ = validate(capsys, "--project-dir", str(demo))
    assert code == 1
    assert out.startswith(f"tables/orders.yml:{number}:1: {field}: expected ")
    assert f'"{value}\\n"' in out and out.endswith("\n1 problem in 1 file; the declarations are invalid\n")


def test_every_problem_is_listed_one_per_line(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (demo / "tables" / "extra.yml").write_text("name: orders\npath: warehouse/orders/\nowner: 2024-01-01\n")
    code, out, _ = validate(capsys, "--project-dir", str(demo))
    assert code == 1
    assert out.splitlines() == [
        'tables/extra.yml:1:1: name: duplicate table name "orders", also declared in tables/orders.yml; '
        "table names must be unique",
        f'tables/extra.yml:2:1: path: same location as "orders" (tables/orders.yml): {demo}/warehouse/orders; '
        "each table needs its own path",
        'tables/extra.yml:3:1: owner: expected a string, got "2024-01-01" (YAML 1.1 reads it as a date, '
        'YAML 1.2 as a string); quote it: "2024-01-01"',
        'tables/orders.yml:4:1: name: duplicate table name "orders", also declared in tables/extra.yml; '
        "table names must be unique",
        f'tables/orders.yml:5:1: path: same location as "orders" (tables/extra.yml): {demo}/warehouse/orders; '
        "each table needs its own path",
        "5 problems in 2 files; the declarations are invalid",
    ]


def test_json_output(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = validate(capsys, "--project-dir", str(demo), "--format", "json", "-s", "tag:gold")
    assert (code, json.loads(out)) == (0, {"valid": True, "tables": ["customers", "orders"], "problems": []})
    (demo / "tables" / "customers.yml").write_text("name: customers\n")
    code, out, _ = validate(capsys, "--project-dir", str(demo), "--format=json")
    assert (code, json.loads(out)) == (1, {"valid": False, "tables": [], "problems": [
        {"file": "tables/customers.yml", "line": 1, "column": 1, "field": "path",
         "message": "is required but missing"}]})


def test_select_narrows_the_report_but_not_the_validation(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = validate(capsys, "--project-dir", str(demo), "--select", "events", "--exclude", "orders")
    assert (code, out.splitlines()[1:]) == (0, ["checked 1 table:", "  events  tables/sales/events.yml"])
    (demo / "tables" / "customers.yml").write_text("name: customers\npath: warehouse/c\nowner: [a]\n")
    code, out, _ = validate(capsys, "--project-dir", str(demo), "--select", "events")
    assert code == 1 and "tables/customers.yml:3:1: owner: expected a string, got a list" in out


def test_a_selector_matching_nothing_exits_1_with_did_you_mean(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = validate(capsys, "--project-dir", str(demo), "-s", "tag:glod")
    assert (code, out) == (1, "")
    assert err.startswith('error: --select "tag:glod" matches no table (did you mean "tag:gold"?); nothing was done')


def test_a_bad_selector_exits_1_with_the_error(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = validate(capsys, "--project-dir", str(demo), "-s", "team:x")
    assert (code, out) == (1, "")
    assert err.startswith('error: unknown selector "team:" in "team:x"')


def test_a_missing_project_exits_1_naming_project_yml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = validate(capsys, "--project-dir", str(tmp_path / "nowhere"))
    assert code == 1
    nowhere = tmp_path / "nowhere"
    assert out.startswith(f"{nowhere}/project.yml: not found: the project folder {nowhere} does not exist. To fix "
                          "this, pass the project's folder (the one holding project.yml) with --project-dir\n")


def test_a_project_dir_that_is_a_file_says_so(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = validate(capsys, "--project-dir", str(demo / "project.yml"))
    assert code == 1
    assert f"not found: the project folder {demo}/project.yml is a file. To fix this, pass the project's" in out


def test_a_project_yml_that_is_a_folder_says_so(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # It was reported "not found", beside a project.yml the user could see.
    (demo / "project.yml").unlink()
    (demo / "project.yml").mkdir()
    code, out, _ = validate(capsys)
    assert code == 1
    assert out.splitlines() == [
        f"project.yml: is a folder, expected a file in {demo}; every project needs a project.yml with at least "
        "`name:`. To fix this, replace the folder with the file, or pass the right folder with --project-dir",
        "1 problem in 1 file; the declarations are invalid"]
    assert (demo / "project.yml").is_dir() and not any((demo / "project.yml").iterdir())


@pytest.mark.parametrize("command", ["validate", "ls"])
def test_validate_and_ls_never_import_spark_the_service_layer_nor_pyarrow(demo: Path, command: str) -> None:
    # Both only read declarations: no JVM, and the executor and pyarrow would be a third of a second
    # of CPU at start.
    check = (
        "import sys\n"
        "from runner.cli import main\n"
        f"code = main([{command!r}, '--project-dir', {str(demo)!r}])\n"
        "loaded = sorted(m for m in sys.modules\n"
        "                if m.split('.')[0] in ('pyspark', 'py4j', 'pyarrow') or m.startswith('runner.service'))\n"
        "assert not loaded, loaded\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_python_dash_m_runner_validate_exits_with_the_code(demo: Path) -> None:
    (demo / "tables" / "orders.yml").write_text("name: orders\npath: warehouse/orders\nclean: {incremental: on}\n")
    done = subprocess.run([sys.executable, "-m", "runner", "validate", "--project-dir", str(demo)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert 'tables/orders.yml:3:9: clean.incremental: expected true or false, got "on"' in done.stdout
