"""A hoodie.properties in another encoding than Hudi's (UTF-16, a byte order mark, NUL bytes) is
reported by `status`, `plan` and `import` by what was found, never as a missing property, and
nothing anywhere is changed. Real fixture tables on disk."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from runner.cli import main
from tests.conftest import FIXTURES, extract_fixture

TABLE = FIXTURES / "sample_table/cow/v6_nonpartitioned.zip"
HUDI_READS = "Hudi reads hoodie.properties as ISO-8859-1 key=value lines (java.util.Properties.load)"
ENCODINGS = {
    "utf-16": (lambda text: text.encode("utf-16"), "a UTF-16 byte order mark (FF FE, little-endian)"),
    "utf-16-be": (lambda text: b"\xfe\xff" + text.encode("utf-16-be"), "a UTF-16 byte order mark (FE FF, big-endian)"),
    "utf-16-le, no mark": (lambda text: text.encode("utf-16-le"),
                           "NUL bytes between its characters (the first at byte 1): UTF-16 without a byte order mark"),
    "utf-8 mark": (lambda text: b"\xef\xbb\xbf" + text.encode("utf-8"),
                   'a UTF-8 byte order mark (EF BB BF), which Hudi reads as part of the first key: '
                   '"ï»¿#Properties", not "#Properties"'),
}


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _project(root: Path, encoding: str, *, declared: bool = True) -> Path:
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text("name: enc\n")
    if declared:
        (root / "tables" / "t.yml").write_text("name: t\npath: table\n")
    extract_fixture(TABLE, root / "unzip").rename(root / "table")
    properties = root / "table" / ".hoodie" / "hoodie.properties"
    encode, _ = ENCODINGS[encoding]
    properties.write_bytes(encode(properties.read_bytes().decode("iso-8859-1")))
    return root


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("command", [["status"], ["plan"]])
def test_status_and_plan_name_the_encoding_found(encoding: str, command: list[str], tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    root = _project(tmp_path / "p", encoding)
    before = _digest(root)

    code = main([*command, "--project-dir", str(root)])

    out, err = capsys.readouterr()
    assert code == 1, out + err
    assert f"! t ({root / 'table'})" in out, out
    assert f".hoodie/hoodie.properties: {HUDI_READS}, but this file has {ENCODINGS[encoding][1]}\n" in out, out
    assert "missing" not in out and "Traceback" not in out + err
    assert "no byte order mark" in out  # the fix
    assert _digest(root) == before


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8 mark"])
def test_import_names_the_file_and_the_encoding_and_writes_nothing(encoding: str, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    root = _project(tmp_path / "p", encoding, declared=False)
    before = _digest(root)

    code = main(["import", str(root / "table"), "--project-dir", str(root)])

    out, err = capsys.readouterr()
    assert code == 1, out + err
    assert (f"! {root / 'table'}/.hoodie/hoodie.properties: {HUDI_READS}, but this file has "
            f"{ENCODINGS[encoding][1]}") in out, out
    assert _digest(root) == before
