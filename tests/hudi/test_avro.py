"""The Avro codec: schemas match what Hudi writes, containers are Hudi-shaped, bad bytes fail clearly."""

from __future__ import annotations

import io
import json
import zipfile

import fastavro
import pytest

from runner.errors import CorruptMetadataError
from runner.hudi import avro

V9_TIMELINE = "v9_txns_simple_nometa/.hoodie/timeline"
V9_ZIP = "sample_table/cow/v9_txns_simple_nometa.zip"


def _fixture_file(zip_name: str, member: str) -> bytes:
    from tests.conftest import FIXTURES

    with zipfile.ZipFile(FIXTURES / zip_name) as archive:
        return archive.read(member)


def _writer_schema(data: bytes) -> dict[str, object]:
    return json.loads(fastavro.reader(io.BytesIO(data)).metadata["avro.schema"])


def _shape(schema: object) -> object:
    """A schema without what Avro resolution ignores: docs, Java string hints, namespaces spelled apart."""
    if isinstance(schema, list):
        return [_shape(s) for s in schema]
    if isinstance(schema, str):
        return schema.rsplit(".", 1)[-1]
    if not isinstance(schema, dict):
        return schema
    ignored = ("doc", "avro.java.string", "namespace")
    if schema.get("type") in ("array", "map"):
        ignored += ("default",)  # Hudi's HoodieWriteStat puts a meaningless default inside these types
    if set(schema) - set(ignored) == {"type"} and isinstance(schema["type"], str):
        return _shape(schema["type"])  # {"type": "string", "avro.java.string": "String"} is "string"
    return {
        k: _shape(v) if k in ("type", "items", "values", "fields") else v
        for k, v in schema.items()
        if k not in ignored
    }


HUDI_WRITTEN = {
    # record name -> (fixture zip, member): a file Hudi 1.1 wrote with its compiled schema
    "HoodieRequestedReplaceMetadata": (V9_ZIP, f"{V9_TIMELINE}/20260307135709297.clustering.requested"),
    "HoodieCommitMetadata": (V9_ZIP, f"{V9_TIMELINE}/20260307135657661_20260307135659468.commit"),
    "HoodieReplaceCommitMetadata": (
        V9_ZIP,
        f"{V9_TIMELINE}/20260307135709297_20260307135709818.replacecommit",
    ),
}


@pytest.mark.parametrize("name", sorted(HUDI_WRITTEN))
def test_schema_is_field_for_field_the_one_hudi_1_1_embeds(name: str) -> None:
    expected = _writer_schema(_fixture_file(*HUDI_WRITTEN[name]))
    assert (expected["name"], expected["namespace"]) == (name, "org.apache.hudi.avro.model")
    assert _shape(json.loads(json.dumps(avro.schema_json(name)))) == _shape(expected)


@pytest.mark.parametrize("name", avro.WRITABLE_SCHEMAS)
def test_writable_schemas_are_self_contained_with_hudi_names(name: str) -> None:
    schema = avro.schema_json(name)
    assert (schema["name"], schema["namespace"]) == (name, "org.apache.hudi.avro.model")
    text = json.dumps(schema)
    assert '"doc"' not in text
    fastavro.parse_schema(json.loads(text))  # no reference left unresolved


def test_writer_output_is_a_hudi_shaped_container() -> None:
    data = avro.write_container("HoodieRequestedReplaceMetadata", {"operationType": "INSERT_OVERWRITE"})
    assert data.startswith(b"Obj\x01")
    reader = fastavro.reader(io.BytesIO(data))
    assert reader.codec == "null"
    assert _writer_schema(data)["name"] == "org.apache.hudi.avro.model.HoodieRequestedReplaceMetadata"
    assert list(reader) == [
        {"operationType": "INSERT_OVERWRITE", "clusteringPlan": None, "extraMetadata": None, "version": 1}
    ]


def test_writing_is_deterministic() -> None:
    record = {"savepointedBy": "u", "savepointedAt": 1, "comments": "", "partitionMetadata": {}}
    first = avro.write_container("HoodieSavepointMetadata", record)
    assert first == avro.write_container("HoodieSavepointMetadata", dict(record))
    assert first != avro.write_container("HoodieSavepointMetadata", {**record, "savepointedAt": 2})


def test_the_sync_marker_is_derived_from_the_content_and_closes_the_block() -> None:
    record = {"savepointedBy": "u", "savepointedAt": 1, "comments": "", "partitionMetadata": {}}
    data = avro.write_container("HoodieSavepointMetadata", record)
    other = avro.write_container("HoodieSavepointMetadata", {**record, "comments": "x"})
    marker = data[-16:]
    assert data.count(marker) == 2 and marker != b"\xff" * 16  # after the header and after the block
    assert other[-16:] != marker
    reader = fastavro.reader(io.BytesIO(data))  # fastavro checks the block's marker against the header's
    (decoded,) = list(reader)
    assert {key: decoded[key] for key in record} == record


@pytest.mark.parametrize("name", sorted(HUDI_WRITTEN))
def test_hudi_reader_schema_resolves_our_files(name: str) -> None:
    """Hudi reads with its compiled schema as the reader schema; names and types must resolve."""
    hudi_schema = _writer_schema(_fixture_file(*HUDI_WRITTEN[name]))
    original = avro.read_container(_fixture_file(*HUDI_WRITTEN[name]), path="x")
    ours = avro.write_container(name, original)
    (resolved,) = fastavro.reader(io.BytesIO(ours), reader_schema=hudi_schema)
    assert resolved == original


def test_hudi_0_14_reader_schema_resolves_a_clustering_plan_with_newer_fields() -> None:
    """Hudi 0.14 (table v6) has no `missingSchedulePartitions`; resolution must skip it."""
    v6 = _fixture_file(
        "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable.zip",
        "v6_simplekeygen_nonhivestyle_overwritetable/.hoodie/20240707001303088.replacecommit.requested",
    )
    original = avro.read_container(_fixture_file(*HUDI_WRITTEN["HoodieRequestedReplaceMetadata"]), path="x")
    ours = avro.write_container("HoodieRequestedReplaceMetadata", original)
    (resolved,) = fastavro.reader(io.BytesIO(ours), reader_schema=_writer_schema(v6))
    assert resolved["clusteringPlan"]["inputGroups"] == original["clusteringPlan"]["inputGroups"]
    assert "missingSchedulePartitions" not in resolved["clusteringPlan"]


@pytest.mark.parametrize("name", ["HoodieCleanerPlan", "HoodieCleanMetadata", "HoodieSavepointMetadata"])
def test_readers_without_extra_metadata_resolve_our_files(name: str) -> None:
    """Hudi 0.14 predates `extraMetadata` on these records: the extra field must be skippable."""
    older = json.loads(json.dumps(avro.schema_json(name)))
    older["fields"] = [f for f in older["fields"] if f["name"] != "extraMetadata"]
    record = _minimal(name) | {"extraMetadata": {"k": "v"}}
    (resolved,) = fastavro.reader(io.BytesIO(avro.write_container(name, record)), reader_schema=older)
    assert "extraMetadata" not in resolved


def _minimal(name: str) -> dict[str, object]:
    return {
        "HoodieCleanerPlan": {"policy": "KEEP_LATEST_COMMITS"},
        "HoodieCleanMetadata": {
            "startCleanTime": "1",
            "timeTakenInMillis": 1,
            "totalFilesDeleted": 0,
            "earliestCommitToRetain": "",
            "partitionMetadata": {},
        },
        "HoodieSavepointMetadata": {
            "savepointedBy": "",
            "savepointedAt": 0,
            "comments": "",
            "partitionMetadata": {},
        },
    }[name]


def test_read_container_returns_the_first_record_of_a_real_file() -> None:
    record = avro.read_container(_fixture_file(*HUDI_WRITTEN["HoodieReplaceCommitMetadata"]), path="x")
    assert record["operationType"] == "CLUSTER"
    assert set(record["partitionToReplaceFileIds"]) == {"region=apac", "region=eu", "region=us"}


PATH = "t/.hoodie/timeline/20260101000000000.clean.requested"


@pytest.mark.parametrize(
    ("data", "found"),
    [
        (b"", "found an empty file"),
        (b'{"json": true}', "found content starting with"),
        (b"Obj\x01", "truncated or corrupt container"),
        (b"Obj\x01" + b"\xff" * 40, "truncated or corrupt container"),
    ],
)
def test_bad_bytes_name_the_file_and_what_was_expected(data: bytes, found: str) -> None:
    with pytest.raises(CorruptMetadataError) as error:
        avro.read_container(data, path=PATH)
    message = str(error.value)
    assert message.startswith(
        f"Cannot decode {PATH}: expected an Avro object container file (magic Obj\\x01)"
    )
    assert "with one record" in message and found in message
    assert error.value.path == PATH


def test_every_truncation_of_a_real_file_is_a_corrupt_metadata_error() -> None:
    data = _fixture_file(*HUDI_WRITTEN["HoodieRequestedReplaceMetadata"])
    for cut in range(0, len(data) - 16, 37):  # the last 16 bytes are the trailing sync marker
        with pytest.raises(CorruptMetadataError):
            avro.read_container(data[:cut], path=PATH)


def test_a_container_without_records_is_refused() -> None:
    out = io.BytesIO()
    fastavro.writer(out, avro.parsed_schema("HoodieCleanerPlan"), [])
    with pytest.raises(CorruptMetadataError, match="without any record"):
        avro.read_container(out.getvalue(), path=PATH)


def test_unknown_schema_and_invalid_record_are_programming_errors() -> None:
    with pytest.raises(KeyError, match="HoodieNope"):
        avro.write_container("HoodieNope", {})
    with pytest.raises(TypeError, match="policy"):
        avro.write_container("HoodieCleanerPlan", {"policy": 3})
    with pytest.raises(ValueError, match="version"):
        avro.write_container("HoodieCleanerPlan", {"policy": "X", "version": "two"})
