"""Files under tables/ that look like declarations but would not be read, named rather than
skipped in silence: a table declared in `orders.YML` was never planned or cleaned, and `validate`
said the project was valid. Backups, other formats and hidden files stay ignored."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.declarations.loader import load_project
from runner.errors import DeclarationError

from .conftest import WriteProject

TABLE = "name: {name}\npath: w/{name}\n"


@pytest.mark.parametrize("file", ["orders.YML", "orders.Yaml", "sub/orders.YAML"])
def test_a_declaration_with_an_upper_case_extension_is_named_not_skipped(file: str, write_project: WriteProject,
                                                                          ) -> None:
    root = write_project({"tables/ok.yml": TABLE.format(name="ok"), f"tables/{file}": TABLE.format(name="orders")})
    done = subprocess.run([sys.executable, "-m", "runner", "validate", "--project-dir", str(root)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stdout
    extension = file.rsplit(".", 1)[1]
    assert (f"{root / 'tables' / file}: not read: declarations end in .yml or .yaml, in lower case, and this one "
            f"ends in .{extension}; rename it") in done.stdout, done.stdout


def test_backups_other_formats_and_hidden_files_are_still_ignored(write_project: WriteProject) -> None:
    root = write_project({
        "tables/ok.yml": TABLE.format(name="ok"),
        "tables/ok.yml.bak": TABLE.format(name="bak"),
        "tables/ok.yml~": TABLE.format(name="tilde"),
        "tables/.ok.yml.swp": TABLE.format(name="swap"),
        "tables/notes.json": "{}",
        "tables/README.md": "# tables\n",
        "tables/.hidden/x.yml": TABLE.format(name="hidden"),
    })
    assert [t.name for t in load_project(root).tables] == ["ok"]


def test_a_declaration_that_is_a_dangling_symbolic_link_says_so(write_project: WriteProject, tmp_path: Path) -> None:
    root = write_project({"tables/ok.yml": TABLE.format(name="ok")})
    os.symlink(tmp_path / "shared" / "orders.yml", root / "tables" / "orders.yml")
    with pytest.raises(DeclarationError) as caught:
        load_project(root)
    (problem,) = caught.value.problems
    assert str(problem) == (f"tables/orders.yml: cannot read the file: it is a symbolic link to "
                            f"{tmp_path / 'shared' / 'orders.yml'}, which does not exist")


def test_a_tables_dir_that_is_a_file_says_so(write_project: WriteProject) -> None:
    root = write_project({"tables/a.yml": TABLE.format(name="a"), "declarations": "name: a\n"},
                         project="name: p\ntables_dir: declarations\n")
    with pytest.raises(DeclarationError) as caught:
        load_project(root)
    (problem,) = caught.value.problems
    assert str(problem) == ('project.yml:2:1: tables_dir: "declarations" is a file in '
                            f"{root}, but tables_dir names the folder holding the table declarations; "
                            "point tables_dir at that folder")


@pytest.mark.parametrize(("key", "meant"), [
    ("TABLE", "table"), ("File_Sizing", "file_sizing"), ("Metadata_Table", "metadata_table"),
])
def test_a_key_in_another_case_gets_did_you_mean(key: str, meant: str, write_project: WriteProject) -> None:
    root = write_project({"tables/a.yml": TABLE.format(name="a") + f"{key}: {{}}\n"})
    with pytest.raises(DeclarationError) as caught:
        load_project(root)
    (problem,) = caught.value.problems
    assert f'{key}: unknown key (did you mean "{meant}"?)' in str(problem), str(problem)


def test_declarations_in_a_symlinked_subfolder_are_read(write_project: WriteProject, tmp_path: Path) -> None:
    # tables/ itself may be a link (it is followed); a linked folder below it was skipped in
    # silence, so validate called the project valid and plan never saw its tables.
    root = write_project({"tables/ok.yml": TABLE.format(name="ok")})
    shared = tmp_path / "shared" / "finance"
    shared.mkdir(parents=True)
    (shared / "ledger.yml").write_text(TABLE.format(name="ledger"))
    os.symlink(shared, root / "tables" / "finance")
    project = load_project(root)
    assert [(t.name, t.source_file) for t in project.tables] == [("ledger", "tables/finance/ledger.yml"),
                                                                 ("ok", "tables/ok.yml")]


def test_a_symlinked_folder_that_leads_back_up_is_read_once(write_project: WriteProject) -> None:
    root = write_project({"tables/ok.yml": TABLE.format(name="ok"), "tables/sub/a.yml": TABLE.format(name="a")})
    os.symlink("..", root / "tables" / "sub" / "up")       # a cycle: tables/sub/up is tables/
    os.symlink("sub", root / "tables" / "again")           # tables/again is tables/sub, read already
    assert sorted(t.name for t in load_project(root).tables) == ["a", "ok"]


@pytest.mark.parametrize("target", ["nowhere", "tables"])
def test_a_tables_dir_that_is_a_broken_symbolic_link_says_so(target: str, tmp_path: Path) -> None:
    # `ls` shows tables/ there: "not found" sent the user looking for a folder that exists.
    (tmp_path / "project.yml").write_text("name: p\n")
    os.symlink(target, tmp_path / "tables")
    with pytest.raises(DeclarationError) as caught:
        load_project(tmp_path)
    (problem,) = caught.value.problems
    reason = "which does not exist" if target == "nowhere" else "which leads back to itself"
    assert str(problem) == (f'project.yml:1:1: tables_dir: folder "tables" in {tmp_path} is a symbolic link to '
                            f"{target}, {reason}; point the link at the folder holding the table declarations, "
                            "or set tables_dir in project.yml")
