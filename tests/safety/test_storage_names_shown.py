"""Attack: a partition folder whose name holds control characters, in the plan a reviewer reads.

A partition's name is its partition value, often taken from the data, and Hudi writes it as it is
unless a writer sets `hoodie.datasource.write.partitionpath.urlencode`. `runner plan` printed every
path it lists as it is: a value holding ESC, a carriage return and a newline rewrote the reviewer's
terminal (`ESC[2K` erased the line listing the file, `\\r` went back over it) and forged a line of its
own, so the plan showed a deletion in another partition and hid where the file really is. Declaration
text is refused with such characters (runner.declarations.text); names read from storage cannot be
refused, so every command's text shows them escaped.
"""

from __future__ import annotations

import re

import pytest

from runner.cli import main
from runner.testing.tables import TableBuilder
from tests.safety.conftest import project_for

FORGED = "p=x\x1b[2K\r      = 0 files, 0 B reclaimed\n      - p=a\u202e"


@pytest.mark.parametrize("colour", ["plain", "forced"])
def test_a_partition_name_cannot_rewrite_or_forge_plan_lines(colour, tmp_path, capsys, monkeypatch):
    if colour == "forced":
        monkeypatch.setenv("FORCE_COLOR", "1")  # through rich, as on a terminal
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", FORGED], partition_field="p")
    builder.commit(writes=1)
    builder.commit(updates=1)  # one old version in each partition: both are listed for deletion
    root = project_for(table, tmp_path / "project")

    code = main(["plan", "--project-dir", str(root)])
    out = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)  # the colours rich itself writes

    assert code == 2, out
    assert "\x1b[2K" not in out and "\r" not in out and "\u202e" not in out
    listed = [line for line in out.splitlines() if line.lstrip().startswith("- ")]
    assert len(listed) == 2, listed  # one line per file, none forged
    assert [line for line in listed if "p=x\\u001b[2K\\u000d" in line and "\\u000a" in line]


def test_every_command_shows_what_storage_names_escaped(tmp_path, capsys):
    """Also where a name reaches a message: an apply refusal naming the file, its report."""
    from runner.commands.terminal import emit

    emit("table t: cannot delete p=x\x1b[2K\r\u202e/f.parquet\n    second line")
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out and "\u202e" not in out
    assert "p=x\\u001b[2K\\u000d\\u202e/f.parquet" in out
    assert out.splitlines()[1] == "    second line"  # the message's own lines stay lines


