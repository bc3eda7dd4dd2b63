"""Shared pieces of the metadata codecs: an immutable mapping and typed access to decoded records."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Mapping
from typing import NoReturn, TypeVar

import fastavro

from runner.errors import CorruptMetadataError
from runner.hudi.avro import AVRO_MAGIC, read_container, read_container_skipping
from runner.hudi.json_text import LongNumber, load_json

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")


class FrozenMap(Mapping[K, V]):
    """An immutable, hashable mapping; equal to any mapping with the same items."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[K, V] | Iterable[tuple[K, V]] = ()) -> None:
        self._items: dict[K, V] = dict(items)

    def __getitem__(self, key: K) -> V:
        return self._items[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(frozenset(self._items.items()))

    def __repr__(self) -> str:
        return f"FrozenMap({self._items!r})"


def freeze(obj: object, name: str, value: object) -> None:
    """Replace a field of a frozen dataclass in `__post_init__` (normalizing lists and dicts)."""
    object.__setattr__(obj, name, value)


def frozen_lists(mapping: Mapping[str, Iterable[T]]) -> FrozenMap[str, tuple[T, ...]]:
    return FrozenMap((key, tuple(values)) for key, values in mapping.items())


def basename(path: str) -> str:
    """The last segment of a path or URI (`file:/t/p/f.parquet` → `f.parquet`)."""
    return path.rstrip("/").rsplit("/", 1)[-1]


def file_name(path: str | None) -> str | None:
    """`basename`, with None or an empty path (Hudi's "no file") as None."""
    return basename(path) if path else None


def join(base_path: str, partition: str, name: str) -> str:
    """`<base>/<partition>/<name>`, as Hudi's `FSUtils.constructAbsolutePath` builds it."""
    folder = f"{base_path.rstrip('/')}/{partition}" if partition else base_path.rstrip("/")
    return f"{folder}/{name}"


class Fields:
    """Typed access to one decoded record; a wrong type is a CorruptMetadataError naming file and field.

    Avro records are typed by their schema already; JSON (v6 commit metadata) is not. Absent and
    null fields read as the default, because older Hudi releases wrote fewer fields.
    """

    __slots__ = ("_is_map", "_record", "path", "where")

    def __init__(self, record: object, *, path: str, where: str, is_map: bool = False) -> None:
        if not isinstance(record, dict):
            expected = "a map" if is_map else "a record"
            raise CorruptMetadataError(
                f"Cannot decode {path}: expected {where} to be {expected}, found {_kind(record)}", path=path
            )
        self._record: dict[str, object] = record
        self.path, self.where, self._is_map = path, where, is_map

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(self._record)

    def label(self, key: str) -> str:
        """How error messages name a field (`plan.policy`) or a map entry (`plan.files['p=1']`)."""
        return f"{self.where}[{key!r}]" if self._is_map else f"{self.where}.{key}"

    def _child(self, value: object, where: str, *, is_map: bool = False) -> Fields:
        return Fields(value, path=self.path, where=where, is_map=is_map)

    def _get(self, key: str, kind: type | tuple[type, ...], label: str) -> object:
        value = self._record.get(key)
        if value is not None and (not isinstance(value, kind) or (kind is int and isinstance(value, bool))):
            self.wrong(key, label, value)
        return value

    def opt_text(self, key: str) -> str | None:
        value = self._get(key, str, "a string")
        return value if isinstance(value, str) else None

    def text(self, key: str) -> str:
        value = self.opt_text(key)
        if value is None:
            raise CorruptMetadataError(
                f"Cannot decode {self.path}: {self.label(key)} is missing", path=self.path
            )
        return value

    def opt_number(self, key: str) -> int | None:
        value = self._get(key, int, "a whole number")
        return value if isinstance(value, int) else None

    def number(self, key: str, default: int = 0) -> int:
        value = self.opt_number(key)
        return default if value is None else value

    def real(self, key: str) -> float:
        value = self._get(key, (int, float), "a number")
        return float(value) if isinstance(value, (int, float)) else 0.0

    def flag(self, key: str, default: bool = False) -> bool:
        value = self._get(key, bool, "true or false")
        return value if isinstance(value, bool) else default

    def record(self, key: str) -> Fields | None:
        value = self._record.get(key)
        return None if value is None else self._child(value, self.label(key))

    def records(self, key: str) -> list[Fields]:
        return [self._child(item, f"{self.label(key)}[{i}]") for i, item in enumerate(self._list(key))]

    def mapping(self, key: str) -> Fields | None:
        """A map field, for entry-wise access (keys in messages as `[key]`)."""
        value = self._record.get(key)
        return None if value is None else self._child(value, self.label(key), is_map=True)

    def entries(self, key: str) -> list[tuple[str, Fields]]:
        """The values of a map of records, with their keys."""
        found = self.mapping(key)
        return (
            [] if found is None else [(k, found._child(v, found.label(k))) for k, v in found._record.items()]
        )

    def record_lists(self, key: str) -> list[tuple[str, list[Fields]]]:
        """The values of a map of lists of records, with their keys."""
        found = self.mapping(key)
        return [] if found is None else [(k, found.records(k)) for k in found.keys]

    def texts(self, key: str) -> tuple[str, ...]:
        values = self._list(key)
        if not all(isinstance(value, str) for value in values):
            self.wrong(key, "a list of strings", values)
        return tuple(str(value) for value in values)

    def text_map(self, key: str) -> FrozenMap[str, str]:
        # A null value is not corruption (Java maps allow it); it carries nothing, so it is dropped.
        found = self._get(key, dict, "a map")
        entries = found if isinstance(found, dict) else {}
        if not all(value is None or isinstance(value, str) for value in entries.values()):
            self.wrong(key, "a map of strings", entries)
        return FrozenMap((str(k), v) for k, v in entries.items() if isinstance(v, str))

    def text_lists(self, key: str) -> FrozenMap[str, tuple[str, ...]]:
        found = self.mapping(key)
        return FrozenMap() if found is None else FrozenMap((k, found.texts(k)) for k in found.keys)

    def reals(self) -> FrozenMap[str, float]:
        """This record read as a map of numbers (Avro `map<double>`)."""
        return FrozenMap((k, self.real(k)) for k in self.keys)

    def _list(self, key: str) -> list[object]:
        value = self._get(key, list, "a list")
        return value if isinstance(value, list) else []

    def wrong(self, key: str, expected: str, found: object) -> NoReturn:
        raise CorruptMetadataError(
            f"Cannot decode {self.path}: expected {self.label(key)} to be {expected}, found {_kind(found)}",
            path=self.path,
        )


def _kind(value: object) -> str:
    if isinstance(value, LongNumber):
        return repr(value)
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


def avro_fields(data: bytes, *, path: str, what: str) -> Fields:
    """The one record of an Avro instant file, for typed access."""
    return Fields(read_container(data, path=path), path=path, where=what)


def avro_fields_without(data: bytes, *, path: str, what: str, skip: frozenset[str]) -> Fields:
    """`avro_fields` without the top-level fields named in `skip`, which are stepped over, not built.

    The reader schema is the file's own writer schema minus those fields, so the kept fields decode
    to exactly what a full decode gives them, whichever Hudi release wrote the file. Skipped fields
    written in blocks that state their size (the runner's own cleans) are jumped over, in a file
    whose one block ends exactly at its sync marker (`avro.read_container_skipping`); others are
    walked by fastavro. Either way a truncated file fails here as it would in a full decode; what
    goes unchecked is only what decoding alone catches (invalid UTF-8 inside a skipped string).
    Files whose schema cannot be cut this way (a kept field using a type a skipped one defines) are
    decoded in full, minus the skipped fields.

    Raises:
        CorruptMetadataError: as `avro_fields`.
    """
    if data.startswith(AVRO_MAGIC):
        found = read_container_skipping(data, skip)
        if found is not None:
            return Fields(found, path=path, where=what)
        try:
            writer = fastavro.reader(io.BytesIO(data)).writer_schema
            if isinstance(writer, dict) and isinstance(writer.get("fields"), list):
                fields = writer["fields"]
                reader = {**writer, "fields": [f for f in fields if f.get("name") not in skip]}
                record = next(iter(fastavro.reader(io.BytesIO(data), reader_schema=reader)), None)
                if isinstance(record, dict):
                    return Fields(record, path=path, where=what)
        except Exception:
            pass
    record = read_container(data, path=path)
    return Fields({k: v for k, v in record.items() if k not in skip}, path=path, where=what)


def json_fields(data: bytes, *, path: str, expected: str, what: str) -> Fields:
    """A JSON instant file (table version 6 commit metadata), for typed access.

    Raises:
        CorruptMetadataError: empty, not UTF-8, not JSON, nested too deeply, or not a JSON object.
    """
    if not data.strip():
        raise CorruptMetadataError(
            f"Cannot decode {path}: expected {expected}, found an empty file", path=path
        )
    return Fields(load_json(data, path=path, expected=expected), path=path, where=what)
