"""Numbers beyond what Hudi's own settings hold are refused by `runner validate`, naming the field,
the limit and the value: hoodie.cleaner.commits.retained, .fileversions.retained, .hours.retained
and hoodie.copyonwrite.insert.split.size are Java ints, hoodie.parquet.max.file.size and
.small.file.limit Java longs. YAML reads any number of digits, so `commits_retained: 1e30` written
out once planned as if Hudi could hold it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from runner.declarations.loader import load_project
from runner.errors import DeclarationError

from .conftest import WriteProject

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1


def _validate(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runner", "validate", "--project-dir", str(root)],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("block", "limit"), [
    ("clean:\n  policy: KEEP_LATEST_COMMITS\n  commits_retained: {}\n", INT_MAX),
    ("clean:\n  policy: KEEP_LATEST_FILE_VERSIONS\n  file_versions_retained: {}\n", INT_MAX),
    ("clean:\n  policy: KEEP_LATEST_BY_HOURS\n  hours_retained: {}\n", INT_MAX),
    ("file_sizing:\n  insert_split_size: {}\n", INT_MAX),
    ("file_sizing:\n  max_file_size: {}\n", LONG_MAX),
    (f"file_sizing:\n  max_file_size: {LONG_MAX}\n  small_file_limit: {{}}\n", LONG_MAX),
])
def test_a_number_beyond_hudis_setting_is_refused_naming_field_and_limit(
        block: str, limit: int, write_project: WriteProject) -> None:
    field = block.rstrip().rsplit("\n", 1)[-1].split(":")[0].strip()
    # The limit itself is valid (a small_file_limit must also stay below its max_file_size).
    largest = limit - 1 if field == "small_file_limit" else limit
    ok = write_project({"tables/t.yml": "name: t\npath: w/t\n" + block.format(largest)})
    assert _validate(ok).returncode == 0, _validate(ok).stdout

    root = write_project({"tables/t.yml": "name: t\npath: w/t\n" + block.format(limit + 1)})
    done = _validate(root)

    assert done.returncode == 1, done.stdout
    assert "tables/t.yml:" in done.stdout and f"{field}: must be <= {limit}, got {limit + 1}" in done.stdout, \
        done.stdout
    assert "Traceback" not in done.stderr



@pytest.mark.parametrize(("files", "where", "expected", "found"), [
    ({"tables/t.yml": 'name: t\npath: w/t\nfile_sizing:\n  max_file_size: "999999999999999 GiB"\n'},
     "tables/t.yml:4:3: file_sizing.max_file_size", "at most 9 digits before GiB (up to 999999999GiB; ",
     'got "999999999999999 GiB" (1073741823999998926258176 bytes)'),
    ({"tables/t.yml": "name: t\npath: w/t\nfile_sizing:\n  max_file_size: 120MiB\n  small_file_limit: 9999999999GB\n"},
     "tables/t.yml:5:3: file_sizing.small_file_limit", "at most 9 digits before GB (up to 999999999GB; ",
     'got "9999999999GB" (9999999999000000000 bytes)'),
    ({"project.yml": "name: test\ndefaults:\n  file_sizing:\n    max_file_size: 8589934592GiB\n",
      "tables/t.yml": "name: t\npath: w/t\n"},
     "project.yml:4:5: defaults.file_sizing.max_file_size", "at most 9 digits before GiB (up to 999999999GiB; ",
     'got "8589934592GiB" (9223372036854775808 bytes)'),
])
def test_a_size_string_beyond_a_java_long_is_refused_naming_file_line_limit_and_value(
        files: dict[str, str], where: str, expected: str, found: str, write_project: WriteProject) -> None:
    # Numbers are bounded by the schema's maximum; a string with a unit named up to 10**24 bytes
    # and passed, to be written into hoodie.parquet.max.file.size, a Java long.
    root = write_project(files)
    done = _validate(root)

    assert done.returncode == 1, done.stdout
    line = next(line for line in done.stdout.splitlines() if line.startswith(f"{root}/{where}: expected "))
    assert expected in line and f"Java longs, at most {LONG_MAX} bytes" in line, line
    assert line.endswith(found), line
    assert "Traceback" not in done.stderr

    # The Python API (every command loads declarations this way) refuses it alike.
    with pytest.raises(DeclarationError) as caught:
        load_project(root)
    assert expected in str(caught.value) and found in str(caught.value)
