"""`target/run_results.json`: two `runner apply` runs at once, and a `target/` that is in the way.

Two runs at once in one project both write the report.

As with dbt's run_results.json, the file holds one run, complete: the run that finished last. Each
run writes its report to a temporary file of its own beside it and renames that into place, so a
reader sees the old report or the new one, never a mix or a truncated file. Real processes write
the real report; nothing is mocked.

A file where `target/` goes, or a folder where the report goes, is refused before any table is
touched: it used to fail the report's write after the tables were cleaned, with a bare "File
exists" and none of the run's output.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema

from tests.conftest import FIXTURES, extract_fixture

REPO = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((REPO / "schemas" / "run_results.schema.json").read_text())
TABLE = FIXTURES / "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable.zip"

# One process writing a large report to `path` again and again, as a long run's report is written.
WRITER = textwrap.dedent("""\
    import sys
    from pathlib import Path
    from runner.execute.apply import TableResult
    from runner.service.report import RunReport

    path, name, times = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    report = RunReport(project=name, run_id=name, started_at="2026-01-01T00:00:00+00:00")
    report.tables = [TableResult(f"{name}_{i}", f"/lake/{name}/{i}" + "x" * 200) for i in range(3000)]
    report.finish()
    for _ in range(times):
        report.write(path)
""")


def _writers(path: Path, names: list[str], times: int) -> list[subprocess.Popen[str]]:
    return [subprocess.Popen([sys.executable, "-c", WRITER, str(path), name, str(times)], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, umask=0o022) for name in names]


def test_a_reader_never_sees_a_partial_report_while_runs_write_it(tmp_path: Path) -> None:
    path = tmp_path / "target" / "run_results.json"
    writers = _writers(path, ["a", "b", "c"], times=40)
    reads = 0
    while any(w.poll() is None for w in writers):
        try:
            text = path.read_text()
        except FileNotFoundError:
            continue
        report = json.loads(text)  # a truncated or interleaved file fails here
        assert len(report["tables"]) == 3000 and {t["name"].split("_")[0] for t in report["tables"]} == \
            {report["run_id"]}
        reads += 1
    for w in writers:
        _, err = w.communicate()
        assert w.returncode == 0, err
    assert reads > 0
    assert json.loads(path.read_text())["run_id"] in {"a", "b", "c"}
    assert [p.name for p in path.parent.iterdir()] == ["run_results.json"]  # no temporary file left behind


def _project(root: Path) -> Path:
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text("name: two\n")
    for name in ("a", "b"):
        extract_fixture(TABLE, root / f"unzip_{name}").rename(root / name)
        (root / "tables" / f"{name}.yml").write_text(
            f"name: {name}\npath: {name}\nclean:\n  policy: KEEP_LATEST_FILE_VERSIONS\n  file_versions_retained: 1\n")
    return root


def test_two_overlapping_applies_leave_one_complete_report(tmp_path: Path) -> None:
    project = _project(tmp_path / "p")
    runs = [subprocess.Popen([sys.executable, "-m", "runner", "apply", "--auto-approve", "--project-dir",
                              str(project), "--select", name], cwd=REPO, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for name in ("a", "b")]
    for run in runs:
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, out + err

    report = json.loads((project / "target" / "run_results.json").read_text())
    jsonschema.validate(report, SCHEMA)
    assert [t["name"] for t in report["tables"]] in (["a"], ["b"])  # one run's, whole
    assert [t["status"] for t in report["tables"]] == ["success"]
    assert sorted(p.name for p in (project / "target").iterdir() if "run_results" in p.name) == ["run_results.json"]


def test_the_report_is_readable_as_any_file_the_run_creates(tmp_path: Path) -> None:
    """Renamed from a temporary file, the report still gets the umask's mode (a teammate's
    `runner docs` reads it), not the owner-only mode of a secure temporary file."""
    path = tmp_path / "target" / "run_results.json"
    (w,) = _writers(path, ["a"], times=1)
    _, err = w.communicate()
    assert w.returncode == 0, err
    assert path.stat().st_mode & 0o777 == 0o644  # the writers run under the usual 022 umask


def _digest(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_file_where_target_goes_is_refused_before_any_table_is_touched(tmp_path: Path) -> None:
    project = _project(tmp_path / "p")
    (project / "target").write_text("not a folder\n")
    before = {name: _digest(project / name) for name in ("a", "b")}

    done = subprocess.run([sys.executable, "-m", "runner", "apply", "--auto-approve", "--project-dir", str(project)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)

    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{project / 'target'} is a file, but the run report needs a folder there" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert {name: _digest(project / name) for name in ("a", "b")} == before  # nothing was cleaned


def test_a_folder_where_the_report_goes_is_refused_before_any_table_is_touched(tmp_path: Path) -> None:
    project = _project(tmp_path / "p")
    (project / "target" / "run_results.json").mkdir(parents=True)
    before = _digest(project / "a")

    done = subprocess.run([sys.executable, "-m", "runner", "apply", "--auto-approve", "--project-dir", str(project),
                           "--select", "a"], cwd=REPO, capture_output=True, text=True, timeout=300)

    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{project / 'target' / 'run_results.json'} is a folder, but the run report is written to a file" in \
        done.stderr, done.stderr
    assert _digest(project / "a") == before
