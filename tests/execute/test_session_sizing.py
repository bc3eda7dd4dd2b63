"""One session per run: executor memory is the largest any selected table declares, and the run
says which table set it (pure: no Spark)."""

from __future__ import annotations

from runner.declarations.model import SparkSettings, TableDeclaration, TableSpark
from runner.execute.session import EXECUTOR_MEMORY, size_session


def table(name: str, memory: str | None = None) -> TableDeclaration:
    return TableDeclaration(name, f"/w/{name}", f"tables/{name}.yml", spark=TableSpark(executor_memory=memory))


def test_no_table_asking_leaves_the_project_settings_alone() -> None:
    project = SparkSettings(conf=(("spark.sql.shuffle.partitions", "8"),))
    sizing = size_session(project, [table("a"), table("b")])
    assert sizing.settings == project and sizing.note is None


def test_the_largest_executor_memory_wins_and_is_named() -> None:
    sizing = size_session(SparkSettings(), [table("a", "4096m"), table("big", "8g"), table("c", "6G"), table("d")])
    assert dict(sizing.settings.conf) == {EXECUTOR_MEMORY: "8g"}
    assert sizing.note == "spark.executor.memory=8g, set by table big, the largest among the selected tables"


def test_one_table_asking_sets_it_alone() -> None:
    sizing = size_session(SparkSettings(conf=(("a.b", "1"),)), [table("t", "2g")])
    assert sizing.settings.conf == (("a.b", "1"), (EXECUTOR_MEMORY, "2g"))
    assert sizing.note == "spark.executor.memory=2g, set by table t"


def test_a_larger_value_in_project_conf_is_kept() -> None:
    project = SparkSettings(conf=((EXECUTOR_MEMORY, "16g"),))
    sizing = size_session(project, [table("t", "8g")])
    assert sizing.settings == project
    assert sizing.note == "spark.executor.memory=16g from project.yml's spark.conf, at least the 8g table t asks for"


def test_a_smaller_value_in_project_conf_is_raised() -> None:
    sizing = size_session(SparkSettings(conf=((EXECUTOR_MEMORY, "1024"),)), [table("t", "2g")])  # bare: MiB
    assert dict(sizing.settings.conf) == {EXECUTOR_MEMORY: "2g"}


def test_spark_connect_is_not_sized_and_the_note_says_so() -> None:
    project = SparkSettings(remote="sc://spark:15002")
    sizing = size_session(project, [table("t", "8g")])
    assert sizing.settings == project
    assert sizing.note == ("table t asks for spark.executor.memory=8g; not applied: the Spark Connect endpoint "
                           "sc://spark:15002 sizes its own executors")
