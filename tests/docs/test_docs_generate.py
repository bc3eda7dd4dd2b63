"""`runner docs generate|serve` through the CLI: read-only, self-contained, same numbers as `plan`."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from runner.cli import main
from tests.execute.test_cli_plan_apply import project as fixture_project
from tests.execute.test_cli_plan_apply import tree_digest

NOW = "20260106000000"


def embedded_data(index: Path) -> dict:
    match = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', index.read_text(), re.DOTALL)
    assert match, "the report data is not embedded"
    return json.loads(match.group(1))


def test_generate_is_read_only_offline_and_agrees_with_plan(demo_project, tmp_path, capsys):
    before = tree_digest(demo_project / "warehouse")
    out = tmp_path / "site"
    assert main(["docs", "generate", "--project-dir", str(demo_project), "--out", str(out), "--now", NOW]) == 0
    assert f"wrote {out / 'index.html'} (3 tables)" in capsys.readouterr().out
    assert tree_digest(demo_project / "warehouse") == before
    page = (out / "index.html").read_text()
    # Self-contained: nothing is fetched, so the page works offline and from file://.
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', page)
    assert "@import" not in page and "url(" not in page and "fetch(" not in page
    data = embedded_data(out / "index.html")
    assert main(["plan", "--project-dir", str(demo_project), "--now", NOW, "--format", "json"]) == 2
    plan = json.loads(capsys.readouterr().out)
    assert [t["plan"] for t in data["tables"]] == plan["tables"]
    assert [t["name"] for t in data["tables"]] == ["customers", "events", "orders"]
    orders = data["tables"][2]
    assert orders["declaration"]["settings"]["clean.commits_retained"] == {"value": 3, "source": "table"}
    assert orders["source_yaml"] == (demo_project / "tables" / "orders.yml").read_text()
    assert data["run_results"] is None


def test_generate_escapes_data_that_could_close_the_script(tmp_path, capsys):
    root = fixture_project(tmp_path / "p", extra="description: 'a </script><b>bold</b> & more'\n")
    assert main(["docs", "generate", "--project-dir", str(root)]) == 0
    index = root / "target" / "docs" / "index.html"
    assert "</script><b>" not in index.read_text()
    assert embedded_data(index)["tables"][0]["declaration"]["description"] == "a </script><b>bold</b> & more"


def test_unreadable_table_is_shown_and_fails_the_command(tmp_path, capsys):
    root = fixture_project(tmp_path / "p")
    (root / "table" / ".hoodie" / "hoodie.properties").unlink()
    assert main(["docs", "generate", "--project-dir", str(root)]) == 1
    assert "! t: could not be read" in capsys.readouterr().out
    table = embedded_data(root / "target" / "docs" / "index.html")["tables"][0]
    assert table["error"]["type"] == "NotAHudiTableError" and "hoodie.properties" in table["error"]["message"]


def test_an_instant_that_is_no_calendar_time_fails_its_table_rather_than_being_placed_elsewhere(tmp_path, capsys):
    # Month 13: strptime read 20261301000000000 as January 30, 10:00, and the report drew it there.
    root = fixture_project(tmp_path / "p")
    timeline = root / "table" / ".hoodie"
    latest = sorted(timeline.glob("*.commit"))[-1]
    (timeline / "20261301000000000.commit").write_bytes(latest.read_bytes())
    assert main(["docs", "generate", "--project-dir", str(root)]) == 1
    assert "! t: could not be read" in capsys.readouterr().out
    table = embedded_data(root / "target" / "docs" / "index.html")["tables"][0]
    assert table["error"] == {"type": "TimelineError", "message": (
        ".hoodie/20261301000000000.commit: instant time 20261301000000000 is no calendar time (month must be in "
        "1..12), so the report cannot place it on the timeline\nTo fix this, check which tool wrote this file; "
        "Hudi names instants by the time they were made.")}


def test_unwritable_out_dir_is_a_clear_error(tmp_path, capsys):
    root = fixture_project(tmp_path / "p")
    assert main(["docs", "generate", "--project-dir", str(root), "--out", "/proc/runner-docs"]) == 1
    err = capsys.readouterr().err
    assert "cannot write the report to /proc/runner-docs" in err and "internal error" not in err


def test_docs_never_imports_pyspark(tmp_path):
    root = fixture_project(tmp_path / "p")
    code = ("import sys; from runner.cli import main; rc = main(['docs', 'generate', '--project-dir', sys.argv[1]]);"
            "assert 'pyspark' not in sys.modules and 'py4j' not in sys.modules, 'pyspark was imported'; sys.exit(rc)")
    done = subprocess.run(
        [sys.executable, "-c", code, str(root)], check=False, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


def test_serve_generates_and_serves_until_interrupted(tmp_path):
    root = fixture_project(tmp_path / "p")
    runner = Path(sys.executable).with_name("runner")
    proc = subprocess.Popen(
        [str(runner), "docs", "serve", "--project-dir", str(root), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stderr.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert url, line
        with urllib.request.urlopen(url.group(0), timeout=10) as response:
            body = response.read().decode()
        assert body == (root / "target" / "docs" / "index.html").read_text()
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert "wrote" in out and os.path.isabs(out.split()[1])


def _docs_process(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runner", "docs", "generate", *argv],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("where", ["target/docs", "target", "--out"])
def test_a_file_where_the_report_folder_goes_is_named_with_what_was_expected(where, tmp_path):
    """Was a bare "File exists" or "Not a directory": now the path, a folder expected, a file found."""
    root = fixture_project(tmp_path / "p")
    blocker = tmp_path / "report" if where == "--out" else root / where
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("not a folder\n")
    out = ["--out", str(tmp_path / "report")] if where == "--out" else []

    done = _docs_process("--project-dir", str(root), *out)

    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{blocker} is a file, but the report needs a folder there" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "File exists" not in done.stderr
    assert blocker.read_text() == "not a folder\n"  # left as it was
    assert done.stdout == ""  # refused before any table was read


def test_a_folder_where_index_html_goes_is_named(tmp_path):
    root = fixture_project(tmp_path / "p")
    (root / "target" / "docs" / "index.html").mkdir(parents=True)

    done = _docs_process("--project-dir", str(root))

    assert done.returncode == 1
    assert f"{root / 'target' / 'docs' / 'index.html'} is a folder, but the report is written to a file " \
           "of that name" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


WRITE_SITE = """
import sys
from pathlib import Path
from runner.docs.page import write_site
data = {"project": sys.argv[2], "tables": [], "run_results": None, "filler": "x" * 2_000_000}
for _ in range(30):
    write_site(data, Path(sys.argv[1]))
"""


def test_two_reports_written_at_once_into_one_folder_both_succeed_and_leave_one_whole_page(tmp_path):
    """Each writer renames a temporary file of its own into place (one shared name let a writer
    publish the other's half-written page, or fail to find its own)."""
    out = tmp_path / "site"
    writers = [subprocess.Popen([sys.executable, "-c", WRITE_SITE, str(out), name], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for name in ("a", "b", "c")]
    for w in writers:
        _, err = w.communicate(timeout=120)
        assert w.returncode == 0, err
    assert embedded_data(out / "index.html")["project"] in {"a", "b", "c"}
    assert [p.name for p in out.iterdir()] == ["index.html"]
