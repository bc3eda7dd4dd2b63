"""`runner.write` called with arguments of the wrong kind, as a user writes them in a notebook: a
pandas DataFrame or a RecordBatch for the records, options as a string, columns named twice, a
table name one letter off. Each is one `RefusedError` that names the argument, says what was
expected and what was found, and how to get there; nothing is created or written. Before, these
were an AttributeError, ValueError or KeyError from deep inside the writer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

import runner
from runner.errors import RefusedError
from tests.writer.writer_helpers import table_yaml

SCHEMA = "id long, region string, name string, ts long"
ROWS = {"id": [1], "region": ["eu"], "name": ["a"], "ts": [1]}


def _nothing_written(root: Path) -> bool:
    return not (root / "warehouse").exists()


@pytest.mark.parametrize(("records", "found", "fix"), [
    (pd.DataFrame(ROWS), "a pandas.core.frame.DataFrame",
     "pass pyarrow.Table.from_pandas(df, preserve_index=False), or spark.createDataFrame(df)."),
    (pa.table(ROWS).to_batches()[0], "a pyarrow.lib.RecordBatch", "pass pyarrow.Table.from_batches([batch])."),
    (ROWS, "a dict", "build a pyarrow.Table (pyarrow.table(...)) or a Spark DataFrame from the records."),
    ([(1, "eu", "a", 1)], "a list",
     "build a pyarrow.Table (pyarrow.table(...)) or a Spark DataFrame from the records."),
    (None, "None", "build a pyarrow.Table (pyarrow.table(...)) or a Spark DataFrame from the records."),
])
def test_records_of_another_kind_are_refused_naming_what_was_given(
        project: Callable[..., Path], records: Any, found: str, fix: str) -> None:
    root = project(t=table_yaml("t"))
    with pytest.raises(RefusedError) as refused:
        runner.write(records, "t", project_dir=root)
    assert str(refused.value) == (
        "runner.write(df, ...): expected the records as a PySpark DataFrame, a pyarrow.Table or a "
        f"pyarrow.RecordBatchReader, got {found}; nothing was written\nTo fix this, {fix}")
    assert _nothing_written(root)


@pytest.mark.parametrize(("options", "found"), [
    ("snappy", "a str ('snappy')"),
    (["hoodie.parquet.compression.codec", "snappy"], "a list"),
    ({1: "snappy"}, "the key 1 (an int)"),
])
def test_options_that_are_no_mapping_of_names_are_refused(
        project: Callable[..., Path], options: Any, found: str) -> None:
    root = project(t=table_yaml("t"))
    with pytest.raises(RefusedError) as refused:
        runner.write(pa.table(ROWS), "t", project_dir=root, options=options)
    assert str(refused.value) == (
        f"runner.write(options=...): expected a mapping of Hudi option names to values, got {found}; "
        "nothing was written\nTo fix this, pass a dict, such as "
        "options={\"hoodie.parquet.compression.codec\": \"snappy\"}.")
    assert _nothing_written(root)


def test_arrow_records_naming_a_column_twice_are_refused_naming_it(project: Callable[..., Path]) -> None:
    root = project(t=table_yaml("t"))
    twice = pa.table(ROWS).append_column("name", pa.array(["b"]))
    with pytest.raises(RefusedError) as refused:
        runner.write(twice, "t", project_dir=root)
    assert str(refused.value) == (
        "runner.write: the records name the column 'name' 2 times (columns: 'id', 'region', 'name', 'ts', 'name'); "
        "a Hudi table's columns have one name each; nothing was written\n"
        "To fix this, rename or drop the duplicates before writing (a join keeps both sides' columns).")
    assert _nothing_written(root)


@pytest.mark.parametrize(("records", "clash"), [
    # Spark (case-insensitive by default, as Hive's metastore) took the table written with both for
    # one column named twice: `The column `name` already exists`, and no query read it.
    (pa.table({**ROWS, "NAME": ["b"]}), "the columns 'name' and 'NAME'"),
    # Not dropped as a meta column (those go by exact name), so the file had both spellings.
    (pa.table({**ROWS, "_HOODIE_RECORD_KEY": ["k"]}), "the columns '_hoodie_record_key' and '_HOODIE_RECORD_KEY'"),
    (pa.table({**ROWS, "address": pa.array([{"city": "x", "City": "y"}])}),
     "the columns 'address.city' and 'address.City'"),
    (pa.table({**ROWS, "address": pa.StructArray.from_arrays(
        [pa.array(["x"]), pa.array(["y"])], names=["city", "city"])}), "the columns 'address.city' and 'address.city'"),
])
def test_arrow_records_naming_a_column_twice_in_any_case_or_depth_are_refused(
        project: Callable[..., Path], records: pa.Table, clash: str) -> None:
    root = project(t=table_yaml("t"))
    with pytest.raises(RefusedError) as refused:
        runner.write(records, "t", project_dir=root)
    assert str(refused.value).startswith(f"runner.write: the records name {clash}, which "), str(refused.value)
    assert str(refused.value).endswith("nothing was written\nTo fix this, rename or drop the duplicates before "
                                       "writing (a join keeps both sides' columns).")
    assert _nothing_written(root)


def test_a_dataframe_naming_a_column_twice_in_another_case_is_refused(
        spark: Any, project: Callable[..., Path]) -> None:
    root = project(t=table_yaml("t"))
    twice = spark.createDataFrame([(1, "eu", "a", 1, "b")], SCHEMA + ", NAME string")
    with pytest.raises(RefusedError, match=r"^runner.write: the records name the columns 'name' and 'NAME', which "):
        runner.write(twice, "t", project_dir=root)
    assert _nothing_written(root)


def test_a_dataframe_naming_a_column_twice_is_refused_before_the_table_is_created(
        spark: Any, project: Callable[..., Path]) -> None:
    # A join that keeps both sides' key: the table's create schema would name `id` twice.
    root = project(t=table_yaml("t"))
    left = spark.createDataFrame([(1, "eu", "a", 1)], SCHEMA)
    twice = left.crossJoin(spark.createDataFrame([(2,)], "id long"))
    with pytest.raises(RefusedError, match=r"^runner.write: the records name the column 'id' 2 times "):
        runner.write(twice, "t", project_dir=root)
    assert _nothing_written(root)


def test_a_table_name_one_letter_off_gets_the_declared_name_suggested(project: Callable[..., Path]) -> None:
    root = project(orders=table_yaml("orders"), customers=table_yaml("customers"))
    with pytest.raises(RefusedError) as refused:
        runner.write(pa.table(ROWS), "ordrs", project_dir=root)
    assert str(refused.value) == (
        f"No table named 'ordrs' is declared in {root}; declared: customers, orders (did you mean \"orders\"?).\n"
        "To fix this, write to \"orders\", or add tables/ordrs.yml with `name: ordrs`, a `path:` and a "
        "`table:` block.")
    assert _nothing_written(root)


@pytest.mark.parametrize(("operation", "message"), [
    ("UPSERT", "Unknown write operation 'UPSERT'; expected one of upsert, insert, bulk_insert "
               "(did you mean \"upsert\"?)."),
    ("delete", "Unknown write operation 'delete'; expected one of upsert, insert, bulk_insert "
               "(runner.write does not delete records: delete them with Hudi itself)."),
    (None, "Unknown write operation None; expected one of upsert, insert, bulk_insert."),
])
def test_an_operation_it_does_not_know_says_what_it_takes(
        project: Callable[..., Path], operation: Any, message: str) -> None:
    root = project(t=table_yaml("t"))
    with pytest.raises(RefusedError) as refused:
        runner.write(pa.table(ROWS), "t", project_dir=root, operation=operation)
    assert str(refused.value) == message
    assert _nothing_written(root)


def test_a_project_dir_of_another_type_is_refused_naming_it(project: Callable[..., Path]) -> None:
    root = project(t=table_yaml("t"))
    with pytest.raises(RefusedError) as refused:
        runner.write(pa.table(ROWS), "t", project_dir=5)  # type: ignore[arg-type]
    assert str(refused.value) == ("runner.write(project_dir=...): expected the project folder as a str or "
                                  "os.PathLike, got an int (5); nothing was written")
    assert _nothing_written(root)


@pytest.mark.parametrize(("where", "found"), [
    ("nowhere", "does not exist"),
    ("file", "is a file"),
    ("empty", "has no project.yml"),
])
def test_a_project_dir_that_holds_no_project_says_so_in_runner_writes_terms(
        project: Callable[..., Path], tmp_path: Path, where: str, found: str) -> None:
    # The loader's words were the CLI's: "pass the project's folder ... with --project-dir".
    root = project(t=table_yaml("t"))
    given = {"nowhere": tmp_path / "nowhere", "file": root / "project.yml", "empty": root / "tables"}[where]
    with pytest.raises(RefusedError) as refused:
        runner.write(pa.table(ROWS), "t", project_dir=given)
    assert str(refused.value) == (
        f"runner.write(project_dir=...): {given} {found}; expected the folder holding the project's project.yml; "
        "nothing was written\nTo fix this, pass project_dir= the project's folder (relative paths are read from "
        f"the current folder, {Path.cwd()}).")
    assert _nothing_written(root)


@pytest.mark.parametrize(("table", "message"), [
    (None, "runner.write(table=...): expected the declared table's name as a str, got None; nothing was written"),
    (5, "runner.write(table=...): expected the declared table's name as a str, got an int (5); nothing was written"),
    ("warehouse/t", "runner.write(table=...): 'warehouse/t' is the path of the table named 't'; runner.write takes "
                    "the table's name; nothing was written\nTo fix this, write to \"t\"."),
    ("tables/t.yml", "runner.write(table=...): 'tables/t.yml' is the declaration of the table named 't'; runner.write "
                     "takes the table's name; nothing was written\nTo fix this, write to \"t\"."),
])
def test_a_table_given_as_another_kind_or_as_its_path_names_the_table(
        project: Callable[..., Path], table: Any, message: str) -> None:
    # Before: "add tables/None.yml with `name: None`", or a declaration named like a path.
    root = project(t=table_yaml("t"))
    with pytest.raises(RefusedError) as refused:
        runner.write(pa.table(ROWS), table, project_dir=root)
    assert str(refused.value) == message
    assert _nothing_written(root)


def test_a_table_name_no_declaration_could_have_is_not_suggested_as_a_new_file(project: Callable[..., Path]) -> None:
    root = project(t=table_yaml("t"))
    with pytest.raises(RefusedError) as refused:
        runner.write(pa.table(ROWS), "Orders Table", project_dir=root)
    assert str(refused.value) == (
        f"No table named 'Orders Table' is declared in {root}; declared: t.\n"
        "To fix this, write to a declared table: a name is a lowercase letter followed by lowercase letters, digits "
        "or underscores.")


@pytest.mark.parametrize(("target", "found"), [(5, "an int (5)"), ("", "an empty str"), ("  ", "an empty str")])
def test_a_target_of_another_kind_or_empty_is_refused_naming_it(
        project: Callable[..., Path], target: Any, found: str) -> None:
    # An int was a TypeError from inside the loader; "" (an unset variable) read as `--target ""`.
    root = project(t=table_yaml("t"))
    with pytest.raises(RefusedError) as refused:
        runner.write(pa.table(ROWS), "t", project_dir=root, target=target)
    assert str(refused.value) == (
        f"runner.write(target=...): expected a target name from project.yml's targets: as a str, or None for the "
        f"project's own settings, got {found}; nothing was written")
    assert _nothing_written(root)


@pytest.mark.parametrize(("created", "declared", "message", "fix"), [
    ("ts", None, "table.precombine_field is not set but the table at {base} has hoodie.table.precombine.field = "
                 "'ts'; refusing to write with a different precombine_field.",
     "set table.precombine_field in tables/t.yml to 'ts'"),
    (None, "ts", "table.precombine_field is 'ts' but the table at {base} has no hoodie.table.precombine.field; "
                 "refusing to write with a different precombine_field.",
     "remove table.precombine_field from tables/t.yml"),
])
def test_a_declaration_that_sets_or_leaves_out_what_the_table_has_says_so_in_yaml_terms(
        project: Callable[..., Path], created: str | None, declared: str | None, message: str, fix: str) -> None:
    # Python's None once stood in the message: "table.precombine_field is None".
    root = project(t=table_yaml("t", precombine=created))
    base = root / "warehouse" / "t"
    runner.write(pa.table(ROWS), "t", project_dir=root)
    (root / "tables" / "t.yml").write_text(table_yaml("t", precombine=declared))
    before = sorted(p.name for p in base.rglob("*"))
    with pytest.raises(RefusedError) as refused:
        runner.write(pa.table(ROWS), "t", project_dir=root)
    assert str(refused.value) == (
        f"tables/t.yml: {message.format(base=base)}\nTo fix this, {fix} (a Hudi table's keys, partitioning and "
        "meta fields cannot change after creation).")
    assert sorted(p.name for p in base.rglob("*")) == before
