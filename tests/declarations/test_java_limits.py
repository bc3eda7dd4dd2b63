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
