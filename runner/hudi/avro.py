"""The one Avro codec: Hudi timeline files as Avro object container files, with Hudi's own schemas.

Hudi (`TimelineMetadataUtils`) writes every Avro instant file (clean plans and results, savepoints,
compaction and clustering plans, rollbacks, and from table version 8 on also commit metadata) as an
Avro object container file: magic `Obj\\x01`, the writer schema embedded in the header, no
compression, exactly one record. It reads one back with its compiled class schema as the reader
schema and requires at least one record; Avro schema resolution matches records by full name, so the
schemas in `avsc/` keep Hudi's record names and the namespace `org.apache.hudi.avro.model`. Fields
Hudi added later carry defaults, so files written here stay readable by older and newer Hudi.

Reading uses the writer schema embedded in each file (never ours), so files from any Hudi release
decode; callers treat fields that a release lacked as absent.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import io
import json
from collections.abc import Mapping
from importlib import resources
from typing import IO, Any, cast

import fastavro
from fastavro.types import Schema

from runner.errors import CorruptMetadataError

AVRO_MAGIC = b"Obj\x01"
NAMESPACE = "org.apache.hudi.avro.model"
EXPECTED_CONTAINER = "an Avro object container file (magic Obj\\x01) with one record"

# The records the runner writes; each `.avsc` in `avsc/` defines one of these or a record they use.
WRITABLE_SCHEMAS = (
    "HoodieCleanerPlan",
    "HoodieCleanMetadata",
    "HoodieSavepointMetadata",
    "HoodieRequestedReplaceMetadata",
    "HoodieCommitMetadata",
    "HoodieReplaceCommitMetadata",
)

_JsonSchema = dict[str, object]


@functools.cache
def _definitions() -> dict[str, _JsonSchema]:
    """Every named record in the packaged `.avsc` files, by short name, as written in the files."""
    found: dict[str, _JsonSchema] = {}
    for entry in resources.files("runner.hudi").joinpath("avsc").iterdir():
        if entry.name.endswith(".avsc"):
            _collect_records(json.loads(entry.read_text(encoding="utf-8")), found)
    return found


def _collect_records(node: object, found: dict[str, _JsonSchema]) -> None:
    if isinstance(node, dict):
        if node.get("type") == "record":
            found[str(node["name"])] = node
        for value in node.values():
            _collect_records(value, found)
    elif isinstance(node, list):
        for value in node:
            _collect_records(value, found)


@functools.cache
def schema_json(name: str) -> _JsonSchema:
    """The self-contained schema of one record, as embedded in the files we write.

    The `.avsc` files refer to records defined in other files by name (as Hudi's do); here each
    reference is replaced by the definition at its first use, as Java's `Schema.toString` prints it.

    Raises:
        KeyError: `name` is not one of the packaged records.
    """
    definitions = _definitions()
    if name not in definitions:
        raise KeyError(f"no Avro schema named {name!r}; packaged: {', '.join(sorted(definitions))}")
    return cast(_JsonSchema, _inline(name, definitions, set()))


def _inline(node: object, definitions: dict[str, _JsonSchema], defined: set[str]) -> object:
    if isinstance(node, str):
        if node in definitions and node not in defined:
            return _inline(definitions[node], definitions, defined)
        return node
    if isinstance(node, list):
        return [_inline(item, definitions, defined) for item in node]
    if not isinstance(node, dict):
        return node
    if node.get("type") == "record":
        defined.add(str(node["name"]))
        # `doc` explains the schema to readers of `avsc/`; it has no business in every instant file.
        record = {key: copy.deepcopy(value) for key, value in node.items() if key not in ("fields", "doc")}
        record["namespace"] = NAMESPACE
        fields = cast(list[dict[str, object]], node["fields"])
        record["fields"] = [{**f, "type": _inline(f["type"], definitions, defined)} for f in fields]
        return record
    return {
        k: _inline(v, definitions, defined) if k in ("type", "items", "values") else v
        for k, v in node.items()
    }


@functools.cache
def parsed_schema(name: str) -> Schema:
    """`schema_json(name)` parsed once by fastavro."""
    return fastavro.parse_schema(schema_json(name))


def is_avro_container(data: bytes) -> bool:
    """Whether `data` starts like an Avro object container file (Hudi v8+ commit metadata, plans)."""
    return data.startswith(AVRO_MAGIC)


def read_container(data: bytes, *, path: str) -> dict[str, object]:
    """Decode the one record of a Hudi Avro instant file, with the writer schema in its header.

    Follows Hudi's rule: the file must be a container holding at least one record; the first is
    returned and any further ones are ignored.

    Args:
        data: the file's bytes.
        path: the file, for error messages.

    Raises:
        CorruptMetadataError: empty, not a container, truncated or garbled, or without a record.
    """
    if not data.startswith(AVRO_MAGIC):
        found = "an empty file" if not data else f"content starting with {data[:8]!r}"
        raise _corrupt(path, found)
    try:
        record = next(iter(fastavro.reader(io.BytesIO(data))), None)
    except Exception as error:  # fastavro raises many types (EOFError, ValueError, ...) for bad bytes
        raise _corrupt(path, f"a truncated or corrupt container ({type(error).__name__}: {error})") from error
    if not isinstance(record, dict):
        raise _corrupt(path, "a container without any record")
    return record


def read_container_skipping(data: bytes, skip: frozenset[str]) -> dict[str, object] | None:
    """The one record's top-level fields but those in `skip`, read without walking the skipped ones,
    or None where that cannot be done and the caller must let fastavro step over them.

    Done when the file is a null-codec container of exactly one block that ends with the header's
    sync marker (so a truncated or extended file is still noticed) and every skipped field is a map
    or array (or a union of one with null) written in blocks that state their byte size, as
    `metadata.clean` writes a clean's lists: each such block is jumped over. Kept fields are
    decoded by fastavro with their own writer schema, so they read as a full decode reads them.
    """
    stream = io.BytesIO(data)
    try:
        reader = fastavro.reader(stream)
    except Exception:
        return None  # let the caller's decode report it
    schema = reader.writer_schema
    start = stream.tell()
    if reader.codec != "null" or not isinstance(schema, dict) or not isinstance(schema.get("fields"), list):
        return None
    view = _Cursor(data, start)
    try:
        if view.long() != 1:
            return None
        size = view.long()
        if size < 0 or view.pos + size + 16 != len(data) or data[-16:] != data[start - 16:start]:
            return None
        record: dict[str, object] = {}
        named: dict[str, dict[Any, Any]] = {}
        for field in schema["fields"]:
            name, kind = field.get("name"), field.get("type")
            if name in skip:
                if not _jump_sized(view, kind):
                    return None
                continue
            sub = fastavro.parse_schema({"type": "record", "name": f"_{name}", "fields": [field]},
                                        named_schemas=named)
            value = fastavro.schemaless_reader(cast(IO[bytes], view), sub, None)
            if not isinstance(value, dict):
                return None
            record.update(value)
        return record if view.pos == len(data) - 16 else None
    except Exception:
        return None


class _Cursor:
    """A read position in bytes, readable as a file by fastavro's schemaless reader."""

    def __init__(self, data: bytes, pos: int) -> None:
        self._data, self.pos = data, pos

    def read(self, n: int = -1) -> bytes:
        end = len(self._data) if n < 0 else self.pos + n
        chunk = self._data[self.pos:end]
        self.pos += len(chunk)
        return chunk

    def long(self) -> int:
        shift = value = 0
        while True:
            byte = self._data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return (value >> 1) ^ -(value & 1)
            shift += 7


def _jump_sized(view: _Cursor, kind: object) -> bool:
    """Step over a map or array (or a union of one with null) whose blocks all state their size."""
    if isinstance(kind, list):  # a union: the branch's index, then its value
        branch = view.long()
        if not 0 <= branch < len(kind):
            return False
        kind = kind[branch]
        if kind == "null":
            return True
    if not (isinstance(kind, dict) and kind.get("type") in ("map", "array")):
        return False
    while True:
        count = view.long()
        if count == 0:
            return True
        if count > 0:
            return False  # an unsized block: only walking it finds its end
        size = view.long()  # read before the position is taken: reading it moves the position
        view.pos += size


def write_container(schema_name: str, record: Mapping[str, object]) -> bytes:
    """Encode one record as Hudi does: an object container file, codec null, a single record.

    The sync marker is derived from the content (Hudi's is random; readers never care), so the same
    record always encodes to the same bytes and a retried write can recognise its own file.

    Args:
        schema_name: one of `WRITABLE_SCHEMAS` (any packaged record name works).
        record: the record, with Hudi's field names; absent fields take the schema default.

    Raises:
        KeyError: unknown schema name.
        ValueError, TypeError: the record does not match the schema (a bug).
    """
    schema = parsed_schema(schema_name)
    out = io.BytesIO()
    # No per-write validation: it costs ten times the encoding itself (13 s for a 20,000-file
    # commit), and every encoder is proven against its schema by the round-trip tests.
    fastavro.writer(out, schema, [dict(record)], codec="null", validator=False, sync_marker=_PLACEHOLDER)
    data = out.getvalue()
    # The file is header + marker + one block + marker. The marker is the digest of the encoded
    # block, taken after encoding: hashing a JSON dump of the record first cost as much as the
    # encoding (a clean plan of 80,000 files). 0xff never occurs in the header's UTF-8 JSON, so
    # the first placeholder is the header's.
    start = data.index(_PLACEHOLDER)
    return _sealed(schema_name, data[:start], data[start + len(_PLACEHOLDER):-len(_PLACEHOLDER)])


def write_container_with(schema_name: str, record: Mapping[str, object], encoded: Mapping[str, bytes]) -> bytes:
    """`write_container`, byte for byte, with some top-level fields handed over already encoded.

    An Avro record's binary form is its fields' encodings one after the other, so a field whose
    value the caller can encode much faster than a generic encoder (a clean's per-partition lists
    of 400,000 paths: fastavro builds and walks a dict per file) is passed as bytes in `encoded`,
    and every other field is encoded here from `record` by fastavro with the field's own schema.

    Args:
        schema_name: one of `WRITABLE_SCHEMAS`.
        record: the other fields; absent ones take the schema default, as in `write_container`.
        encoded: field name -> the field value's Avro binary encoding (see `encode_long`,
            `encode_string`); the caller's encoders are proven equal to fastavro's by tests.
    """
    out = io.BytesIO()
    for name, schema, default in _field_schemas(schema_name):
        if name in encoded:
            out.write(encoded[name])
        else:
            fastavro.schemaless_writer(out, schema, {name: record[name] if name in record else default})
    body = out.getvalue()
    return _sealed(schema_name, _header(schema_name), encode_long(1) + encode_long(len(body)) + body)


def encode_long(value: int) -> bytes:
    """Avro's `int`/`long` binary form: zig-zag, then 7 bits a byte, low bits first."""
    number = (value << 1) ^ (value >> 63)
    out = bytearray()
    while number > 0x7F:
        out.append((number & 0x7F) | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def encode_string(value: str) -> bytes:
    """Avro's `string` binary form: the UTF-8 length, then the bytes."""
    data = value.encode("utf-8")
    return encode_long(len(data)) + data


@functools.cache
def _field_schemas(schema_name: str) -> tuple[tuple[str, Schema, object], ...]:
    """Each top-level field of the record: its name, a one-field record schema holding just it
    (whose encoding is exactly the field's, in the record's namespace), and its default. Parsed in
    field order with shared names, so a named type an earlier field defines resolves in a later one."""
    named: dict[str, dict[str, object]] = {}
    fields = cast(list[dict[str, object]], schema_json(schema_name)["fields"])
    return tuple(
        (
            str(f["name"]),
            fastavro.parse_schema(
                {"type": "record", "name": f"{schema_name}_{f['name']}", "namespace": NAMESPACE, "fields": [f]},
                named_schemas=named,
            ),
            f.get("default"),
        )
        for f in fields
    )


@functools.cache
def _header(schema_name: str) -> bytes:
    """The container header `write_container` writes for this schema, without its sync marker."""
    out = io.BytesIO()
    fastavro.writer(out, parsed_schema(schema_name), [], codec="null", validator=False, sync_marker=_PLACEHOLDER)
    data = out.getvalue()
    return data[:data.index(_PLACEHOLDER)]


def _sealed(schema_name: str, header: bytes, block: bytes) -> bytes:
    """header + marker + block + marker, the marker derived from the block (see `write_container`)."""
    marker = hashlib.md5(schema_name.encode("utf-8") + b"\0" + block, usedforsecurity=False).digest()
    return header + marker + block + marker


_PLACEHOLDER = b"\xff" * 16


def _corrupt(path: str, found: str) -> CorruptMetadataError:
    return CorruptMetadataError(
        f"Cannot decode {path}: expected {EXPECTED_CONTAINER}, found {found}", path=path
    )
