"""Progress with counts and bytes for listing, deletes and rewrites: live on a terminal (through a
real pseudo-terminal), plain final counts under NO_COLOR, nothing at all when output is captured."""

from __future__ import annotations

import json
import re

import pytest

from runner.cli import main
from runner.commands._common import human_bytes
from tests.execute.test_cli_plan_apply import project
from tests.execute.test_table_spark_apply import sized_project
from tests.test_terminal import ANSI, RUNNER, run_in_pty


def report(root) -> dict:
    (table,) = json.loads((root / "target" / "run_results.json").read_text())["tables"]
    return table


@pytest.mark.spark
def test_a_tty_shows_listing_deletes_and_rewrites_with_counts_and_bytes(tmp_path):
    root = sized_project(tmp_path / "p")
    code, out = run_in_pty([RUNNER, "apply", "--auto-approve", "--project-dir", str(root)])
    assert code == 0, out
    text = ANSI.sub("", out)
    done = report(root)
    assert done["files_deleted"] > 0 and done["files_rewritten"] > 0
    # Each bar starts at zero and its last frame shows every file and byte of the step.
    deleted, deleted_bytes = done["files_deleted"], human_bytes(done["bytes_deleted"])
    assert f"t: deleting (0/{deleted} files, 0 B/{deleted_bytes})" in text
    assert f"t: deleting ({deleted}/{deleted} files, {deleted_bytes}/{deleted_bytes})" in text
    rewritten, rewritten_bytes = done["files_rewritten"], human_bytes(done["bytes_rewritten"])
    assert f"t: rewriting small files (0/{rewritten} files, 0 B/{rewritten_bytes})" in text
    assert f"t: rewriting small files ({rewritten}/{rewritten} files, {rewritten_bytes}/{rewritten_bytes})" in text
    # A whole-table listing counts files and bytes as it goes (no total is known in advance).
    assert re.search(r"t: listing the table's files \([1-9][\d,]* files, [\d.]+ [KMG]?i?B\)", text), text


def test_no_color_on_a_tty_leaves_each_final_count_as_a_plain_line(tmp_path):
    root = project(tmp_path / "p")  # a clean only: deleted on threads, no Spark
    code, out = run_in_pty([RUNNER, "apply", "--auto-approve", "--project-dir", str(root)], env={"NO_COLOR": "1"})
    assert code == 0, out
    assert not ANSI.search(out)
    lines = out.replace("\r\n", "\n").splitlines()
    size = human_bytes(report(root)["bytes_deleted"])
    assert f"t: deleting (4/4 files, {size}/{size})" in lines
    assert any(re.fullmatch(r"t: listing the table's files \([1-9][\d,]* files, [\d.]+ [KMG]?i?B\)", line)
               for line in lines), lines


def test_captured_output_has_no_progress_and_no_escape_codes(tmp_path, capfd):
    root = project(tmp_path / "p")
    assert main(["apply", "--auto-approve", "--project-dir", str(root)]) == 0
    out, err = capfd.readouterr()
    assert not ANSI.search(out + err)
    assert "deleting (" not in out + err and "listing" not in out + err
    assert "~ t: 4 files deleted" in out


class Recorder:
    """A `runner.progress.Sink` that keeps every report."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, str, int | None, int | None]] = []
        self.done: list[tuple[int, int]] = []

    def begin(self, what: str, unit: str, total: int | None, total_bytes: int | None) -> None:
        self.steps.append((what, unit, total, total_bytes))

    def advance(self, items: int, nbytes: int) -> None:
        self.done.append((items, nbytes))


def test_listing_reports_partitions_and_files_with_their_bytes(tmp_path):
    from runner.hudi.view import discover_partitions, list_partitions
    from runner.progress import reporting_to
    from runner.storage import storage_for

    storage = storage_for(str(project(tmp_path / "p") / "table"))
    everything = [info for info in storage.walk("")]
    sizes = {info.path: info.size for info in everything}
    seen = Recorder()
    with reporting_to(seen):
        listed = discover_partitions(storage)
    assert seen.steps == [("listing the table's files", "files", None, None)]
    assert tuple(map(sum, zip(*seen.done, strict=True))) == (len(everything), sum(sizes.values()))

    seen = Recorder()
    with reporting_to(seen):
        list_partitions(storage, [*listed.partitions, "no-such-partition"])
    wanted = len(listed.partitions) + 1
    assert seen.steps == [("listing partitions", "partitions", wanted, None)]
    in_partitions = sum(size for files in listed.files.values() for _, size in files)
    markers = sum(size for path, size in sizes.items() if ".hoodie_partition_metadata" in path)
    assert tuple(map(sum, zip(*seen.done, strict=True))) == (wanted, in_partitions + markers)


def test_without_a_sink_reports_go_nowhere(tmp_path):
    from runner import progress

    progress.begin("listing", "files")  # no display installed: nothing happens, nothing fails
    progress.advance(3, 10)
    assert progress.bytes_of(["a"]) is None
    with progress.known_sizes({"a": 5, "b": 7}):
        assert progress.bytes_of(["a", "b", "c"]) == 12
