"""`runner import` pointed at the wrong place: a path inside a table (a partition folder, .hoodie, a
data file) names the table and the path to give; a tree with links back up, kernel file systems
(/proc) and many unreadable folders is searched once per real folder and summarised, not spammed."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from runner.cli import main
from runner.testing import TableBuilder


def _project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "project.yml").write_text("name: lake\n")
    return root


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def orders(tmp_path: Path) -> Path:
    table = tmp_path / "lake" / "orders"
    TableBuilder(table, name="orders", partitions=["region=eu", "region=us"]).commit(writes=1)
    return table


@pytest.mark.parametrize(("inside", "what"), [
    ("region=eu", "a partition folder"),
    (".hoodie", "its timeline folder .hoodie"),
    (".hoodie/hoodie.properties", "a file of its timeline folder .hoodie"),
])
def test_a_path_inside_a_table_names_the_table_to_import(orders: Path, tmp_path: Path, capsys, inside: str,
                                                         what: str) -> None:
    # It said "no Hudi table found in .../region=eu" (or "found a file"), as if there were none.
    project = _project(tmp_path / "project")
    code, out, err = _run(capsys, "import", str(orders / inside), "--project-dir", str(project))
    assert (code, err) == (1, "")
    assert (f"! {orders / inside}: is inside the Hudi table {orders} ({what}); import the table itself"
            in out), out
    assert f"To fix this, run `runner import {orders}`" in out
    assert not (project / "tables").exists()


def test_a_data_file_names_its_table(orders: Path, tmp_path: Path, capsys) -> None:
    data = next((orders / "region=us").glob("*.parquet"))
    project = _project(tmp_path / "project")
    code, out, _ = _run(capsys, "import", str(data), "--project-dir", str(project))
    assert code == 1
    assert f"! {data}: is inside the Hudi table {orders} (a data file); import the table itself" in out


def test_links_back_up_are_searched_once_and_kernel_file_systems_not_at_all(orders: Path, tmp_path: Path,
                                                                          capsys) -> None:
    # `runner import /` went round /proc/<pid>/root (a link to /) and /proc/<pid>/cwd for minutes.
    lake = orders.parent
    (lake / "more").mkdir()
    (lake / "more" / "up").symlink_to("..")  # a loop: lake/more/up/more/up/...
    (lake / "again").symlink_to("orders")  # the same table by a second name
    (lake / "proc").symlink_to("/proc")
    project = _project(tmp_path / "project")
    started = time.monotonic()
    code, out, _ = _run(capsys, "import", str(lake), "--dry-run", "--project-dir", str(project))
    assert time.monotonic() - started < 30
    assert code == 0, out
    assert out.count("would write") == 1
    assert f"Not searched: {lake}/proc (/proc, a kernel file system: no table is kept there)" in out
    assert "Too many levels" not in out


def test_many_unreadable_folders_are_summarised(orders: Path, tmp_path: Path, capsys) -> None:
    lake = orders.parent
    for number in range(12):
        (lake / f"broken{number:02}").mkdir()
        (lake / f"broken{number:02}" / "loop").symlink_to("loop")  # cannot be stat'ed: too many levels of links
    project = _project(tmp_path / "project")
    code, out, _ = _run(capsys, "import", str(lake), "--dry-run", "--project-dir", str(project))
    assert code == 1
    lines = [line for line in out.splitlines() if line.startswith("! ")]
    assert lines == [f"! {lake}: 12 folders could not be listed and were not searched (12: Too many levels of "
                     f"symbolic links), such as {lake}/broken00, {lake}/broken01, {lake}/broken02"], out
    assert out.count("would write") == 1


def test_a_few_unreadable_folders_are_each_named(orders: Path, tmp_path: Path, capsys) -> None:
    lake = orders.parent
    (lake / "broken").mkdir()
    (lake / "broken" / "loop").symlink_to("loop")
    project = _project(tmp_path / "project")
    code, out, _ = _run(capsys, "import", str(lake), "--dry-run", "--project-dir", str(project))
    assert code == 1
    assert f"! Cannot stat {lake}/broken/loop: " in out
    assert os.path.islink(lake / "broken" / "loop")
