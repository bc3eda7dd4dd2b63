"""Fast writer tests: schema conversion, hoodie.properties, routing and rollback records, no Spark."""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from pathlib import Path

import fastavro
import pytest

from runner.declarations.model import FileSizing, TableDeclaration, TableSpec
from runner.errors import DeclarationError, RefusedError
from runner.hudi.files import BaseFile, write_token
from runner.hudi.instant import InstantTime
from runner.hudi.metadata import decode_rollback_metadata, decode_rollback_plan
from runner.hudi.properties import TableConfig, parse_properties
from runner.sizing import assign_inserts
from runner.storage.local import LocalStorage
from runner.vocabulary import TableType
from runner.writer import create
from runner.writer.rollback import ROLLBACK_METADATA, ROLLBACK_PLAN, _encode
from runner.writer.route import plan_routing
from runner.writer.schema import arrow_schema, avro_schema, decimal_bytes
from tests.conftest import FIXTURES


def _nullable(name: str, kind: object) -> dict[str, object]:
    return {"name": name, "type": kind, "nullable": True, "metadata": {}}


# The Spark schema of the hudi-rs `v6_nonpartitioned` fixture's columns, as `StructType.jsonValue()`.
FIXTURE_SPARK_SCHEMA = {"type": "struct", "fields": [
    _nullable("id", "integer"), _nullable("name", "string"), _nullable("isActive", "boolean"),
    _nullable("byteField", "byte"), _nullable("shortField", "short"), _nullable("intField", "integer"),
    _nullable("longField", "long"), _nullable("floatField", "float"), _nullable("doubleField", "double"),
    _nullable("decimalField", "decimal(10,5)"), _nullable("dateField", "date"),
    _nullable("timestampField", "timestamp"), _nullable("binaryField", "binary"),
    _nullable("arrayField", {"type": "array", "containsNull": True, "elementType": {"type": "struct", "fields": [
        _nullable("arr_struct_f1", "string"), _nullable("arr_struct_f2", "integer")]}}),
    _nullable("mapField", {"type": "map", "keyType": "string", "valueContainsNull": True, "valueType": {
        "type": "struct", "fields": [_nullable("map_field_value_struct_f1", "double"),
                                     _nullable("map_field_value_struct_f2", "boolean")]}}),
    _nullable("structField", {"type": "struct", "fields": [
        _nullable("field1", "string"), _nullable("field2", "integer"),
        _nullable("child_struct", {"type": "struct", "fields": [
            _nullable("child_field1", "double"), _nullable("child_field2", "boolean")]})]}),
]}


def _fixture_file(zip_name: str, member_suffix: str) -> bytes:
    with zipfile.ZipFile(FIXTURES / zip_name) as archive:
        name = next(n for n in archive.namelist() if n.endswith(member_suffix) and "__MACOSX" not in n)
        return archive.read(name)


def test_avro_schema_matches_the_schema_hudi_stored_in_a_v6_commit() -> None:
    commit = json.loads(_fixture_file("sample_table/cow/v6_nonpartitioned.zip", "20240418173550988.commit"))
    expected = json.loads(commit["extraMetadata"]["schema"])
    assert avro_schema(FIXTURE_SPARK_SCHEMA, "v6_nonpartitioned") == expected


def test_arrow_schema_puts_meta_columns_first_and_widens_small_ints() -> None:
    import pyarrow as pa

    schema = arrow_schema(FIXTURE_SPARK_SCHEMA)
    assert schema.names[:5] == ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                                "_hoodie_partition_path", "_hoodie_file_name"]
    assert schema.field("byteField").type == pa.int32()
    assert schema.field("timestampField").type == pa.timestamp("us", tz="UTC")
    assert schema.field("decimalField").type == pa.decimal128(10, 5)


def test_decimal_sizes_follow_spark() -> None:
    assert [decimal_bytes(p) for p in (1, 2, 9, 10, 18, 38)] == [1, 1, 4, 5, 8, 16]


def test_map_with_non_string_keys_is_refused() -> None:
    schema = {"type": "struct", "fields": [_nullable("m", {"type": "map", "keyType": "integer",
                                                          "valueType": "string", "valueContainsNull": True})]}
    with pytest.raises(RefusedError, match="map<integer"):
        avro_schema(schema, "t")


@pytest.mark.parametrize(("keys", "parts", "expected"), [
    (("id",), (), create.NON_PARTITIONED),
    (("id", "name"), (), create.NON_PARTITIONED),
    (("id",), ("region",), create.SIMPLE),
    (("id", "name"), ("region",), create.COMPLEX),
    (("id",), ("a", "b"), create.COMPLEX),
])
def test_key_generator_is_inferred_as_hudi_does(keys: tuple[str, ...], parts: tuple[str, ...], expected: str) -> None:
    assert create.key_generator_for(keys, parts) == expected


def _decl(spec: TableSpec | None, name: str = "orders") -> TableDeclaration:
    return TableDeclaration(name=name, path="/tmp/x", source_file=f"tables/{name}.yml", table=spec)


def test_new_table_properties_are_hudi_v6_cow_with_hudi_checksum() -> None:
    props = create.new_table_properties(_decl(TableSpec(TableType.COPY_ON_WRITE, ("id",), ("region",), "ts")), None)
    config = TableConfig.from_properties(props, path="p")
    assert (config.version, config.timeline_layout_version, config.table_type.value) == (6, 1, "COPY_ON_WRITE")
    assert config.record_key_fields == ("id",) and config.partition_fields == ("region",)
    assert config.ordering_fields == ("ts",) and config.hive_style_partitioning
    assert props["hoodie.table.keygenerator.class"] == create.SIMPLE
    assert list(props)[-1] == "hoodie.table.checksum"
    assert props["hoodie.table.checksum"] == str(zlib.crc32(b".orders"))
    text = create.properties_bytes(props).decode("iso-8859-1")
    assert parse_properties(text, path="p") == props


def test_hudi_checksum_rule_reproduces_a_fixture() -> None:
    text = _fixture_file("sample_table/cow/v6_empty.zip", "hoodie.properties").decode("iso-8859-1")
    props = parse_properties(text, path="p")
    key = f"{props['hoodie.database.name']}.{props['hoodie.table.name']}"
    assert props["hoodie.table.checksum"] == str(zlib.crc32(key.encode()))


def test_absent_table_without_table_block_is_a_declaration_error() -> None:
    with pytest.raises(DeclarationError, match="has no `table:` block"):
        create.new_table_properties(_decl(None), None)


def test_merge_on_read_is_refused() -> None:
    with pytest.raises(RefusedError, match="COPY_ON_WRITE tables only"):
        create.new_table_properties(_decl(TableSpec(TableType.MERGE_ON_READ, ("id",))), None)


def test_declaration_mismatch_names_the_field_expected_and_found() -> None:
    props = create.new_table_properties(_decl(TableSpec(TableType.COPY_ON_WRITE, ("id",), ("region",), "ts")), None)
    config = TableConfig.from_properties(props, path="p")
    with pytest.raises(RefusedError, match=r"table.record_key is \['order_id'\] but .* = \['id'\]"):
        create.check_declaration(_decl(TableSpec(TableType.COPY_ON_WRITE, ("order_id",), ("region",), "ts")), config)


def _base(file_id: str, size: int) -> BaseFile:
    return BaseFile(file_id, "0-1-2", InstantTime("20240101000000000"), "parquet", size)


def test_routing_tops_up_small_files_then_opens_new_groups_like_assign_inserts() -> None:
    sizing = FileSizing(max_file_size=1000, small_file_limit=600, insert_split_size=4)
    latest = {"p": [_base("a-0", 500), _base("b-0", 900)]}
    ids = iter(["n1-0", "n2-0"])
    routing = plan_routing({("p", "b-0"): 2}, {"p": 11}, latest, sizing=sizing, avg_record_size=100,
                           auto_split=False, make_file_id=lambda: next(ids))
    planned = assign_inserts([("a-0", 500), ("b-0", 900)], 11, max_file_size=1000, small_file_limit=600,
                             insert_split_size=4, avg_record_size=100)
    assert [(b.file_id, b.updates, b.inserts) for b in routing.buckets] == [
        ("b-0", 2, 0), ("a-0", 0, 5), ("n1-0", 0, 4), ("n2-0", 0, 2)]
    assert [b.records for b in planned] == [5, 4, 2]
    assert [(r.start, r.end, r.file_id) for r in routing.ranges] == [(0, 5, "a-0"), (5, 9, "n1-0"), (9, 11, "n2-0")]
    assert routing.bucket("a-0").prev_commit == "20240101000000000"
    assert routing.bucket("n1-0").base_file is None


def test_groups_in_pending_clustering_are_never_small_files() -> None:
    sizing = FileSizing(max_file_size=1000, small_file_limit=600, insert_split_size=4)
    latest = {"p": [_base("a-0", 100), _base("b-0", 100)]}
    routing = plan_routing({}, {"p": 3}, latest, sizing=sizing, avg_record_size=100, auto_split=False,
                           blocked={("p", "a-0")})
    assert [(b.file_id, b.inserts) for b in routing.buckets] == [("b-0", 3)]


def test_routing_refuses_updates_to_unknown_groups() -> None:
    with pytest.raises(ValueError, match="no latest base file"):
        plan_routing({("p", "x-0"): 1}, {}, {}, sizing=FileSizing(), avg_record_size=1, auto_split=False)


def _writer_schema(data: bytes) -> dict[str, object]:
    return fastavro.reader(io.BytesIO(data)).writer_schema  # type: ignore[no-any-return]


def _strip(schema: object) -> object:
    """A schema without Java-only annotations and docs, names made short, for comparison."""
    if isinstance(schema, dict):
        out = {k: _strip(v) for k, v in schema.items() if k not in ("avro.java.string", "doc", "namespace")}
        if isinstance(out.get("name"), str):
            out["name"] = str(out["name"]).rsplit(".", 1)[-1]
        if out.get("type") == "string" and len(out) == 1:
            return "string"
        return out
    if isinstance(schema, list):
        return [_strip(v) for v in schema]
    return schema


@pytest.mark.parametrize(("ours", "suffix"), [
    (ROLLBACK_PLAN, "20250126040936578.rollback.requested"),
    (ROLLBACK_METADATA, "20250126040936578.rollback"),
])
def test_rollback_schemas_are_those_hudi_wrote_on_a_v6_table(ours: dict[str, object], suffix: str) -> None:
    theirs = _writer_schema(_fixture_file("sample_table/mor/parquet/v6_nonpartitioned_rollback.zip", suffix))
    assert _strip(theirs) == _strip(json.loads(json.dumps(_writer_schema(_encode(ours, _sample_record(ours))))))


def _sample_record(schema: dict[str, object]) -> dict[str, object]:
    if schema is ROLLBACK_PLAN:
        return {"instantToRollback": {"commitTime": "1", "action": "commit"}, "RollbackRequests": [], "version": 1}
    return {"startRollbackTime": "2", "timeTakenInMillis": 1, "totalFilesDeleted": 0, "commitsRollback": ["1"],
            "partitionMetadata": {}, "version": 1, "instantsRollback": [{"commitTime": "1", "action": "commit"}]}


def test_rollback_records_decode_with_the_runner_codecs() -> None:
    plan = _encode(ROLLBACK_PLAN, {
        "instantToRollback": {"commitTime": "20240101000000000", "action": "commit"},
        "RollbackRequests": [{"partitionPath": "p", "fileId": "", "latestBaseInstant": "",
                              "filesToBeDeleted": ["/t/p/f.parquet"], "logBlocksToBeDeleted": {}}],
        "version": 1,
    })
    assert decode_rollback_plan(plan, path="x").instant_time == "20240101000000000"
    meta = _encode(ROLLBACK_METADATA, {
        "startRollbackTime": "20240101000000001", "timeTakenInMillis": 3, "totalFilesDeleted": 1,
        "commitsRollback": ["20240101000000000"],
        "partitionMetadata": {"p": {"partitionPath": "p", "successDeleteFiles": ["/t/p/f.parquet"],
                                    "failedDeleteFiles": [], "rollbackLogFiles": {}, "logFilesFromFailedCommit": {}}},
        "version": 1, "instantsRollback": [{"commitTime": "20240101000000000", "action": "commit"}],
    })
    decoded = decode_rollback_metadata(meta, path="x")
    assert decoded.commits_rolled_back == ("20240101000000000",)
    assert decoded.deleted_files == {"p": ("/t/p/f.parquet",)}


def test_fixtures_folder_exists() -> None:
    assert Path(FIXTURES).is_dir()


def test_the_schema_hudi_stored_accepts_the_same_columns_and_refuses_others() -> None:
    from runner.writer.table_schema import reconcile

    commit = json.loads(_fixture_file("sample_table/cow/v6_nonpartitioned.zip", "20240418173550988.commit"))
    stored = commit["extraMetadata"]["schema"]
    names = [f["name"] for f in FIXTURE_SPARK_SCHEMA["fields"]]  # type: ignore[index]

    order, schema = reconcile(FIXTURE_SPARK_SCHEMA, stored, table="v6_nonpartitioned", where="t")
    assert order == names and schema["fields"] == FIXTURE_SPARK_SCHEMA["fields"]

    reversed_fields = {"type": "struct", "fields": list(reversed(FIXTURE_SPARK_SCHEMA["fields"]))}  # type: ignore[arg-type]
    order, _ = reconcile(reversed_fields, stored, table="v6_nonpartitioned", where="t")
    assert order == names

    nested = json.loads(json.dumps(FIXTURE_SPARK_SCHEMA))
    nested["fields"][15]["type"]["fields"][2]["type"]["fields"][0]["type"] = "string"  # child_field1
    with pytest.raises(RefusedError, match=r"column 'structField' is .* in the records but .* in the table"):
        reconcile(nested, stored, table="v6_nonpartitioned", where="t")


@pytest.mark.parametrize(("folder", "partitions"), [(True, ""), (False, "files"), (True, "files,column_stats")])
def test_a_table_with_a_metadata_table_is_refused(tmp_path: Path, folder: bool, partitions: str) -> None:
    # Either sign is enough: hoodie.table.metadata.partitions alone makes readers list through it.
    props = create.new_table_properties(_decl(TableSpec(TableType.COPY_ON_WRITE, ("id",), ("region",), "ts")), None)
    config = TableConfig.from_properties(props | {"hoodie.table.metadata.partitions": partitions}, path="p")
    if folder:
        (tmp_path / ".hoodie" / "metadata").mkdir(parents=True)
    with pytest.raises(RefusedError, match="the table has a metadata table"):
        create.check_writable(LocalStorage(str(tmp_path)), config)


def test_a_table_without_a_metadata_table_is_writable(tmp_path: Path) -> None:
    props = create.new_table_properties(_decl(TableSpec(TableType.COPY_ON_WRITE, ("id",), ("region",), "ts")), None)
    create.check_writable(LocalStorage(str(tmp_path)), TableConfig.from_properties(props, path="p"))


def test_file_names_carry_hudis_write_token() -> None:
    token = write_token(3, 14, 159)
    assert token == "3-14-159"  # FSUtils.makeWriteToken: "%d-%d-%d" of partition, stage, attempt
    parsed = BaseFile.parse(f"abc-0_{token}_20240101000000000.parquet")
    assert parsed is not None and parsed.write_token == token
