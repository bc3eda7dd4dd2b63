"""Files under tables/ that no editor writes as a declaration: a named pipe, a link to a device, a
file of many megabytes, a file saved as UTF-16. Each is one problem naming the file and what it is;
none makes `runner validate` wait, or read without end."""

from __future__ import annotations

import codecs
import os
from pathlib import Path

import pytest

from runner.declarations.loader import load_project
from runner.errors import DeclarationError

from .conftest import WriteProject

TABLE = "name: {name}\npath: w/{name}\n"


def _problems(root: Path) -> list[str]:
    with pytest.raises(DeclarationError) as caught:
        load_project(root)
    return [str(problem) for problem in caught.value.problems]


def test_a_named_pipe_is_named_not_waited_on(write_project: WriteProject) -> None:
    # open() waited for a writer that never came: validate hung, and a CI job with it.
    root = write_project({"tables/ok.yml": TABLE.format(name="ok")})
    os.mkfifo(root / "tables" / "orders.yml")
    assert _problems(root) == [
        "tables/orders.yml: not read: it is a named pipe (FIFO), not a file; a declaration is a plain file"]


def test_a_link_to_a_device_is_named_not_read_without_end(write_project: WriteProject) -> None:
    # /dev/zero never ends: validate read it until memory ran out.
    root = write_project({"tables/ok.yml": TABLE.format(name="ok")})
    (root / "tables" / "zero.yml").symlink_to("/dev/zero")
    assert _problems(root) == [
        "tables/zero.yml: not read: it is a symbolic link to /dev/zero, a character device, not a file; a "
        "declaration is a plain file"]


def test_a_file_too_large_to_be_a_declaration_is_named_without_reading_it(write_project: WriteProject) -> None:
    # A data export saved under tables/ by mistake was read and composed whole.
    root = write_project({"tables/ok.yml": TABLE.format(name="ok")})
    with open(root / "tables" / "dump.yml", "wb") as handle:
        handle.truncate(64 * 1024 * 1024)  # sparse: no 64 MiB written
    assert _problems(root) == [
        "tables/dump.yml: not read: it is 64.0 MiB, and a declaration is at most 16 MiB; is this the right file?"]


@pytest.mark.parametrize(("bom", "encoding"), [
    (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"), (codecs.BOM_UTF32_LE, "utf-32-le")])
def test_a_file_saved_as_utf16_or_utf32_is_named_so(write_project: WriteProject, bom: bytes, encoding: str) -> None:
    # Windows PowerShell 5 writes UTF-16 with `>` and Out-File; the message said "byte 0xff".
    root = write_project({"tables/ok.yml": TABLE.format(name="ok")})
    (root / "tables" / "orders.yml").write_bytes(bom + TABLE.format(name="orders").encode(encoding))
    name = encoding[:6].upper()
    assert _problems(root) == [
        f"tables/orders.yml: not UTF-8 text: it is {name} (it starts with a {name} byte order mark), as Windows "
        "PowerShell 5 writes with `>` and Out-File; save it as UTF-8"]


# --- project.yml itself: what it is, never "not found" beside a name `ls` shows -------------------

def test_a_project_yml_that_is_a_named_pipe_is_named_not_waited_on(write_project: WriteProject) -> None:
    # It was "not found in ...; create it", beside the pipe `ls` shows; reading it would wait for a writer.
    root = write_project({"tables/ok.yml": TABLE.format(name="ok")}, project=None)
    os.mkfifo(root / "project.yml")
    assert _problems(root) == [
        "project.yml: not read: it is a named pipe (FIFO), not a file; project.yml is a plain file"]


def test_a_project_yml_linked_to_a_device_is_named_not_read(write_project: WriteProject) -> None:
    root = write_project({"tables/ok.yml": TABLE.format(name="ok")}, project=None)
    (root / "project.yml").symlink_to("/dev/null")
    assert _problems(root) == [
        "project.yml: not read: it is a symbolic link to /dev/null, a character device, not a file; project.yml "
        "is a plain file"]


def test_a_project_yml_linked_to_nothing_says_where_it_points(write_project: WriteProject) -> None:
    root = write_project({"tables/ok.yml": TABLE.format(name="ok")}, project=None)
    (root / "project.yml").symlink_to("shared/project.yml")
    assert _problems(root) == [
        "project.yml: cannot read the file: it is a symbolic link to shared/project.yml, which does not exist"]
