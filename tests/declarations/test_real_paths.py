"""Guards that must judge where a table's data really is: symbolic links followed (item 1 and 7)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner.declarations.loader import load_project
from runner.declarations.model import Project, TableDeclaration
from runner.declarations.paths import RealLocations
from runner.errors import DeclarationError, RefusedError
from runner.service.locations import guarded_location

from .conftest import WriteProject


def problems(root: Path) -> list[str]:
    with pytest.raises(DeclarationError) as caught:
        load_project(root)
    return [str(problem) for problem in caught.value.problems]


def test_a_table_folder_linking_outside_the_allowed_roots_is_refused(write_project: WriteProject,
                                                                     tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "precious"
    outside.mkdir(parents=True)
    root = write_project({"project.yml": "name: test\nallowed_roots: [warehouse]\n",
                          "tables/a.yml": "name: a\npath: warehouse/a\n"})
    (root / "warehouse").mkdir()
    (root / "warehouse" / "a").symlink_to(outside)
    assert problems(root) == [
        f"tables/a.yml:2:1: path: resolves to {root}/warehouse/a, whose symbolic links lead to {outside}, "
        f"outside the allowed roots ({root}/warehouse); fix the path, or add its root to allowed_roots in "
        "project.yml"]


def test_a_linked_parent_folder_counts_too_and_a_linked_root_is_followed(write_project: WriteProject,
                                                                         tmp_path: Path) -> None:
    real_lake = tmp_path / "disk" / "lake"
    (real_lake / "t").mkdir(parents=True)
    root = write_project({"project.yml": "name: test\nallowed_roots: [lake]\n",
                          "tables/t.yml": "name: t\npath: lake/t\n"})
    (root / "lake").symlink_to(real_lake)  # the root itself is a link: its tables are inside it
    assert [t.name for t in load_project(root).tables] == ["t"]
    (tmp_path / "other").mkdir()
    (root / "tables" / "u.yml").write_text("name: u\npath: lake/u/x\n")
    (real_lake / "u").symlink_to(tmp_path / "other")  # a parent of the table path leads outside
    assert problems(root) == [
        f"tables/u.yml:2:1: path: resolves to {root}/lake/u/x, whose symbolic links lead to "
        f"{tmp_path}/other/x, outside the allowed roots ({root}/lake); fix the path, or add its root to "
        "allowed_roots in project.yml"]


def test_tables_that_overlap_through_a_link_are_refused(write_project: WriteProject, tmp_path: Path) -> None:
    root = write_project({"tables/outer.yml": "name: outer\npath: warehouse/customers\n",
                          "tables/alias.yml": "name: alias\npath: warehouse/legacy\n",
                          "tables/same.yml": "name: same\npath: warehouse/mirror\n"})
    (root / "warehouse" / "customers" / "legacy").mkdir(parents=True)
    (root / "warehouse" / "legacy").symlink_to(root / "warehouse" / "customers" / "legacy")
    (root / "warehouse" / "mirror").symlink_to(root / "warehouse" / "customers")
    found = problems(root)
    assert any(p.startswith("tables/alias.yml:2:1: path: ") and "lies inside the location of table \"outer\"" in p
               for p in found)
    assert any(p.startswith("tables/same.yml:2:1: path: same location as \"outer\"") for p in found)
    assert any(p.startswith("tables/outer.yml:2:1: path: ") and "contains the location of table \"alias\"" in p
               for p in found)


def test_plan_and_apply_check_the_roots_again_on_the_real_path(tmp_path: Path) -> None:
    # A link can change between validation and acting; the command layer checks it once more.
    (tmp_path / "warehouse").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "warehouse" / "a").symlink_to(tmp_path / "outside")
    project = Project(name="p", directory=str(tmp_path), allowed_roots=(f"{tmp_path}/warehouse",))
    decl = TableDeclaration(name="a", path=f"{tmp_path}/warehouse/a", source_file="tables/a.yml")
    with pytest.raises(RefusedError) as caught:
        guarded_location(project, decl)
    assert str(caught.value) == (
        f"table a (tables/a.yml): path resolves to {tmp_path}/warehouse/a, whose symbolic links lead to "
        f"{tmp_path}/outside, outside the allowed roots ({tmp_path}/warehouse); fix the path, or add its root "
        "to allowed_roots in project.yml; nothing was read or written")
    (tmp_path / "warehouse" / "a").unlink()
    (tmp_path / "warehouse" / "b").mkdir()
    (tmp_path / "warehouse" / "a").symlink_to(tmp_path / "warehouse" / "b")
    assert guarded_location(project, decl) == f"{tmp_path}/warehouse/b"


def test_real_locations_follow_links_exactly_as_realpath_does(tmp_path: Path) -> None:
    # `load_project` follows each folder's links once for all its tables (`RealLocations`); every
    # kind of link must come out as `os.path.realpath` has it, for paths that exist and that do not.
    (tmp_path / "disk" / "lake" / "t").mkdir(parents=True)
    (tmp_path / "disk" / "file").write_text("x")
    links = {
        "lake": "disk/lake",  # relative, to a folder
        "rel": "../p/disk/lake/t",  # relative, through `..`
        "abs": str(tmp_path / "disk"),
        "dangling": "nowhere/at/all",
        "loop_a": "loop_b", "loop_b": "loop_a",
        "self": "self",
        "chain": "lake",
        "to_file": "disk/file",
        "up": "..",
    }
    (tmp_path / "p").symlink_to(tmp_path)
    for name, target in links.items():
        (tmp_path / name).symlink_to(target)
    (tmp_path / "disk" / "lake" / "inner").symlink_to("t")
    names = [*links, "disk", "disk/lake", "disk/lake/t", "disk/lake/inner", "missing", "p"]
    tails = ["", "/t", "/inner", "/x/y", "/t/z", "/inner/z"]
    candidates = [str(tmp_path / name) + tail for name in names for tail in tails]
    candidates += ["/", str(tmp_path)]
    shared = RealLocations()
    for path in candidates * 2:  # the second round answers from what the first one learnt
        assert shared(path) == os.path.realpath(path), path
        assert RealLocations()(path) == os.path.realpath(path), path
    assert shared("s3://bucket/lake/t") == "s3://bucket/lake/t"
