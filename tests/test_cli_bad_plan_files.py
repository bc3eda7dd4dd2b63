"""`runner apply PLAN_JSON` with a plan file that is missing, a folder, not JSON or not text: one
clear error naming the file, what was expected and found, and the fix; exit 1; no traceback; the
table untouched."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_cli_apply_safety import cli, digest, make_project, saved_plan

FIX = "To fix this, pass a file written by `runner plan --out`, unedited; make a new one with " \
      "`runner plan --out target/plan.json`."


def _bad_file(kind: str, root: Path, tmp_path: Path) -> str:
    if kind == "missing":
        return str(tmp_path / "nowhere" / "plan.json")
    if kind == "folder":
        return str(tmp_path)
    if kind == "declaration":  # a YAML file given by mistake
        return str(root / "tables" / "t.yml")
    if kind == "truncated":
        path = tmp_path / "plan.json"
        path.write_text('{"format_version": 2, "tables": [\n')
        return str(path)
    if kind in _TEXTS:
        path = tmp_path / "plan.json"
        path.write_text(_TEXTS[kind])
        return str(path)
    path = tmp_path / "plan.bin"
    path.write_bytes(b"PK\x03\x04\xff\xfe")  # a zip, say
    return str(path)


# JSON that Python's decoder rejects other than with a JSONDecodeError: a number longer than it
# converts (4,300 digits) and nesting deeper than its recursion limit were internal errors. A key
# twice in one object is valid JSON, of which the decoder keeps the last value: a second "tables"
# made the plan apply nothing, and exit 0, whatever the reviewer read in the first.
_TEXTS = {
    "long number": '{"format_version": ' + "9" * 5000 + "}",
    "nested": "[" * 100_000 + "]" * 100_000,
    "key twice": '{"format_version": 2, "tables": [{"name": "t"}], "tables": []}',
}


@pytest.mark.parametrize(("kind", "message", "fix"), [
    ("long number", "not a plan: it holds a number 5000 digits long; nothing was applied", FIX),
    ("nested", "not a plan: its JSON is nested too deeply to read; nothing was applied", FIX),
    ("key twice", 'not a plan: the key "tables" appears twice in one object, and a reader may take either '
                  "value; nothing was applied", FIX),
    ("missing", "not found; nothing was applied", "To fix this, check the path, or pass a file written by"),
    ("folder", "is a folder, expected a JSON file; nothing was applied",
     "To fix this, name the plan file itself (such as target/plan.json)."),
    ("declaration", "not valid JSON (line 1, column 1: Expecting value); nothing was applied", FIX),
    ("truncated", "not valid JSON (line 2, column 1: Expecting value); nothing was applied", FIX),
    ("binary", "expected JSON text, found bytes that are not UTF-8 (at byte 4); nothing was applied", FIX),
])
def test_a_bad_plan_file_is_one_clear_error(kind: str, message: str, fix: str, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    root = make_project(tmp_path / "p")
    before = digest(root)
    bad = _bad_file(kind, root, tmp_path)
    code, out, err = cli(capsys, "apply", bad, "--project-dir", str(root))
    assert code == 1 and out == ""
    first, second = err.splitlines()
    assert first == f"error: plan file {bad}: {message}"
    assert second.startswith(fix)
    assert digest(root) == before


def test_no_traceback_without_debug_and_one_with_it(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    argv = [sys.executable, "-m", "runner", "apply", str(tmp_path / "missing.json"), "--project-dir", str(root)]
    plain = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert plain.returncode == 1 and "Traceback" not in plain.stderr and "not found" in plain.stderr
    debug = subprocess.run([*argv, "--debug"], capture_output=True, text=True, timeout=120)
    assert debug.returncode == 1 and "Traceback (most recent call last)" in debug.stderr
    assert debug.stderr.rstrip().splitlines()[-2].startswith("error: plan file ")


@pytest.mark.parametrize(("edit", "message"), [
    # The schema's own message for a const says what was expected but not what was found.
    ({"format_version": "2"}, "at $.format_version: expected 2, found \"2\""),
    ({"format_version": 2.5}, "at $.format_version: expected 2, found 2.5"),
])
def test_an_edited_field_says_what_was_expected_and_what_was_found(
        edit: dict, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_project(tmp_path / "p")
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(saved_plan(root, capsys, plan_file) | edit))
    before = digest(root)
    code, out, err = cli(capsys, "apply", str(plan_file), "--project-dir", str(root))
    assert (code, out) == (1, "")
    assert err.splitlines()[0] == (f"error: plan file {plan_file} does not match schemas/plan.schema.json "
                                   f"{message}; nothing was applied")
    assert digest(root) == before
