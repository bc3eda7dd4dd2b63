"""hoodie.properties is read as Hudi reads it: `java.util.Properties.load`, ISO-8859-1, whatever
tool wrote the file. A raw byte above 0x7F (a file written by a script rather than by Java, which
escapes such characters as `\\u00e9`) was decoded as UTF-8 with replacement characters, so the
runner saw another record key field than Hudi: a false drift, a name import could not use, and
`metadata_table: disable` failed with an internal UnicodeDecodeError."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import FIXTURES, extract_fixture

V6 = FIXTURES / "sample_table/cow/v6_nonpartitioned.zip"


def _table_with_latin1_bytes(root: Path) -> Path:
    table = extract_fixture(V6, root / "unzip").rename(root / "table")
    props = table / ".hoodie" / "hoodie.properties"
    text = props.read_bytes().decode("iso-8859-1")
    lines = []
    for line in text.splitlines():
        if line.startswith("hoodie.table.name="):
            line = "hoodie.table.name=Caf\xe9"
        lines.append(line)
    props.write_bytes(("\n".join(lines) + "\n").encode("iso-8859-1"))  # raw 0xE9, not \u00e9
    return table


def _runner(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runner", *argv], capture_output=True, text=True,
                          encoding="utf-8", timeout=120)


def test_a_raw_latin1_byte_reads_as_hudi_reads_it(tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / "tables").mkdir(parents=True)
    (project / "project.yml").write_text("name: p\n")
    _table_with_latin1_bytes(project)

    done = _runner("import", str(project / "table"), "--dry-run", "--project-dir", str(project))

    assert done.returncode == 0, done.stdout + done.stderr
    assert 'hoodie.table.name is "Café"' in done.stdout and "\ufffd" not in done.stdout, done.stdout
    assert "+ cafe " in done.stdout


def test_parse_of_the_bytes_agrees_with_java(tmp_path: Path) -> None:
    from runner.hudi.properties import read_properties

    assert read_properties(b"k=caf\xe9\nj=caf\\u00e9\n", path="p") == {"k": "café", "j": "café"}
    assert read_properties("k=é".encode(), path="p") == {"k": "Ã©"}  # UTF-8 bytes, as Java sees them
