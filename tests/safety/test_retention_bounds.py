"""Retention counts at their bounds: the smallest the schema allows, and values far beyond any
table's history (a window reaching back before year 1000, or before the calendar datetime knows).
A window wider than the history keeps everything, as Hudi's `Instant.now().minus(hours)` does.
The largest count is Hudi's own bound, a Java int (2**31 - 1 hours reaches back about 245,000
years); beyond it `runner validate` refuses the value (tests/declarations/test_java_limits.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.cli import main
from runner.hudi.instant import InstantTime
from runner.plan.policies import hours_cutoff
from runner.testing.tables import TableBuilder
from tests.safety.conftest import digest

_HUGE = [9_000_000, 18_000_000, 2**31 - 1]


def _project(tmp_path: Path, clean: str) -> tuple[Path, Path]:
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"], version=8)
    builder.commit(writes=1)
    builder.commit(updates=1)
    builder.commit(updates=1)
    root = tmp_path / "project"
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text('name: bounds\nspark: {master: "local[1]"}\n')
    (root / "tables" / "t.yml").write_text(f"name: t\npath: {table}\nclean: {clean}\n")
    return table, root


@pytest.mark.parametrize("clean", [
    *(f"{{policy: KEEP_LATEST_BY_HOURS, hours_retained: {h}}}" for h in _HUGE),
    *(f"{{policy: KEEP_LATEST_COMMITS, commits_retained: {n}}}" for n in _HUGE),
    *(f"{{policy: KEEP_LATEST_FILE_VERSIONS, file_versions_retained: {n}}}" for n in _HUGE),
])
def test_a_window_wider_than_the_history_keeps_everything(clean, tmp_path, capsys):
    table, root = _project(tmp_path, clean)
    before = digest(table)

    assert main(["plan", "--project-dir", str(root)]) == 0, capsys.readouterr().out
    assert main(["apply", "--project-dir", str(root), "--auto-approve"]) == 0, capsys.readouterr().out
    assert digest(table) == before


@pytest.mark.parametrize("clean,kept", [
    ("{policy: KEEP_LATEST_COMMITS, commits_retained: 1}", 2),  # and the version before it, as Hudi
    ("{policy: KEEP_LATEST_FILE_VERSIONS, file_versions_retained: 1}", 1),
    ("{policy: KEEP_LATEST_BY_HOURS, hours_retained: 1}", 3),  # the builder's commits are in 2026-01-01
])
def test_the_smallest_retention_keeps_the_latest_slice(clean, kept, tmp_path, capsys):
    from hudi import HudiTable

    table, root = _project(tmp_path, clean)
    rows = HudiTable(str(table)).read()

    assert main(["apply", "--project-dir", str(root), "--auto-approve"]) == 0, capsys.readouterr().out
    assert HudiTable(str(table)).read() == rows
    assert len(list(table.rglob("*.parquet"))) == kept


@pytest.mark.parametrize("zone", ["UTC", "LOCAL"])
def test_the_cutoff_of_a_window_reaching_before_any_instant_is_the_earliest_instant(zone):
    from datetime import UTC, datetime

    now = datetime(2026, 1, 1, tzinfo=UTC)
    for hours in _HUGE:
        assert hours_cutoff(now, hours, zone) == InstantTime("0" * 17)
    assert hours_cutoff(now, 24, "UTC") == InstantTime("20251231000000000")


@pytest.mark.parametrize("version,policy", [(6, "KEEP_LATEST_COMMITS"), (8, "KEEP_LATEST_FILE_VERSIONS")])
def test_a_timeline_of_only_replacecommits_keeps_what_readers_and_a_savepoint_read(version, policy, tmp_path, capsys):
    import pyarrow as pa
    from hudi import HudiReadOptions, HudiTableBuilder

    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"], version=version)
    builder.insert_overwrite(["p=a", "p=b"])
    builder.insert_overwrite("p=a", groups=2)
    kept = builder.insert_overwrite("p=b")
    builder.savepoint(str(kept))
    builder.insert_overwrite(["p=a", "p=b"])
    builder.delete_partition("p=b")  # p=b's groups all replaced, but the savepoint lists one
    root = tmp_path / "project"
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text('name: bounds\nspark: {master: "local[1]"}\n')
    field = "commits_retained" if policy == "KEEP_LATEST_COMMITS" else "file_versions_retained"
    (root / "tables" / "t.yml").write_text(f"name: t\npath: {table}\nclean: {{policy: {policy}, {field}: 1}}\n")

    def rows(as_of: str | None = None) -> list[dict[str, object]]:
        reader = HudiTableBuilder.from_base_uri(str(table)).build()
        batches = reader.read(HudiReadOptions().with_as_of_timestamp(as_of) if as_of else HudiReadOptions())
        return sorted(pa.Table.from_batches(batches).to_pylist(), key=repr) if batches else []

    latest, savepointed = rows(), rows(str(kept))
    assert latest == sorted(builder.expected_rows().to_pylist(), key=repr) and savepointed

    assert main(["apply", "--project-dir", str(root), "--auto-approve"]) == 0, capsys.readouterr().out
    assert rows() == latest and rows(str(kept)) == savepointed
    assert len(list(table.rglob("*.parquet"))) < 9  # the clean did delete replaced groups
