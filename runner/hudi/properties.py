"""`hoodie.properties`: the table's identity and layout, and the version gate every command passes first.

The file is a Java `.properties` file written by `java.util.Properties.store`: `#` comment lines (a
save date), one `key=value` per line, `:` and `=` escaped with a backslash (Avro schema JSON holds
many of them), anything outside printable ASCII as `\\uXXXX`. Hudi reads it with `Properties.load`
from a byte stream, which decodes ISO-8859-1; decode the bytes that way before calling
`parse_properties`.

The runner supports table versions 6 (Hudi 0.14/0.15, timeline layout 1: instants directly in
`.hoodie/`, JSON commit metadata) and 8/9 (Hudi 1.0/1.1, layout 2: instants in `.hoodie/timeline/`,
Avro commit metadata). Every other version is refused before anything else is read, and so is a
table kept in an external format (`hoodie.table.format` other than `native`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from runner.errors import TableError, UnsupportedTableError
from runner.vocabulary import TableType

SUPPORTED_TABLE_VERSIONS = (6, 8, 9)

_NEWLINE_RE = re.compile(r"\r\n|\r|\n")
_WHITESPACE = " \t\f"
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_STORE_ESCAPES = {
    "\t": "\\t",
    "\n": "\\n",
    "\r": "\\r",
    "\f": "\\f",
    "=": "\\=",
    ":": "\\:",
    "#": "\\#",
    "!": "\\!",
    "\\": "\\\\",
}


def read_properties(raw: bytes, *, path: str) -> dict[str, str]:
    """A `.properties` file's bytes, parsed as Hudi reads them: `Properties.load(InputStream)`
    decodes ISO-8859-1 whatever wrote the file, so a raw 0xE9 is `é` and UTF-8's `é` (C3 A9) is
    `Ã©`, as Hudi sees it. A file in another encoding is refused (`parse_properties`)."""
    return parse_properties(raw.decode("iso-8859-1"), path=path)


_HUDI_READS = "Hudi reads hoodie.properties as ISO-8859-1 key=value lines (java.util.Properties.load)"
_ENCODING_HINT = ("save it again as Hudi writes it (java.util.Properties.store): ISO-8859-1 or plain ASCII, "
                  "other characters as \\uXXXX escapes, no byte order mark, or restore a copy Hudi wrote "
                  "(such as hoodie.properties.backup beside it, if there is one); the runner changed nothing.")
_BOMS = {"\xff\xfe": "a UTF-16 byte order mark (FF FE, little-endian)",
         "\xfe\xff": "a UTF-16 byte order mark (FE FF, big-endian)"}


def _refuse_other_encodings(text: str, path: str) -> None:
    """Refuse text (bytes decoded as ISO-8859-1) that another encoding wrote, naming it.

    Properties.store never writes a byte order mark or a raw NUL (it escapes both as `\\uXXXX`).
    In UTF-16 every key reads as NUL-spaced characters, so the table would be reported as lacking
    hoodie.table.version. A UTF-8 mark is three ISO-8859-1 characters to Hudi, neither blank nor
    comment marker, so they start the first line's key: Hudi then misses that property (or reads
    the save-date comment as one); the runner refuses rather than read another key than Hudi.
    """
    found = _BOMS.get(text[:2])
    if found is None and text.startswith(("\xef\xbb\xbf", "\ufeff")):
        mark = "ï»¿" if text.startswith("\xef") else "\ufeff"
        first = next(iter(parse_properties(text, path=path, checked=True)))  # the mark starts a key
        found = ("a UTF-8 byte order mark (EF BB BF), which Hudi reads as part of the first key: "
                 f'"{first}", not "{first.removeprefix(mark)}"')
    if found is None and "\x00" in text:
        at = text.index("\x00")
        spaced = len(text) > 3 and all(c == "\x00" for c in text[at:at + 16:2])
        found = (f"NUL bytes between its characters (the first at byte {at}): UTF-16 without a byte order mark"
                 if spaced else f"a NUL byte at byte {at}")
    if found is not None:
        raise TableError(f"{path}: {_HUDI_READS}, but this file has {found}", path=path, hint=_ENCODING_HINT)


def parse_properties(text: str, *, path: str, checked: bool = False) -> dict[str, str]:
    """Parse Java `.properties` text exactly as `java.util.Properties.load` does.

    Comment lines start with `#` or `!` after optional blanks; the key ends at the first unescaped
    `=`, `:` or blank; a line ending in an odd number of backslashes continues on the next line,
    whose leading blanks are dropped; `\\t \\n \\r \\f \\uXXXX` are decoded and any other escaped
    character stands for itself. A later duplicate key wins.

    Args:
        text: the file's content, already decoded (ISO-8859-1 for a file Hudi wrote).
        path: the file, for error messages.
        checked: the text's encoding was checked already (no byte order mark, no raw NUL).

    Returns:
        Keys and values in file order.

    Raises:
        TableError: a malformed `\\uXXXX` escape; a byte order mark or raw NUL bytes, which another
            encoding than Hudi's wrote (UTF-16, UTF-8 with a mark).
    """
    if not checked:
        _refuse_other_encodings(text, path)
    props: dict[str, str] = {}
    line_no, counted = 1, 0
    for start, line in _logical_lines(text):
        line_no += len(_NEWLINE_RE.findall(text, counted, start))  # lines come in order: count on
        counted = start
        key_end, value_start = _split_key_value(line)
        key = _unescape(line[:key_end], path=path, line_no=line_no)
        props[key] = _unescape(line[value_start:], path=path, line_no=line_no)
    return props


_NATURAL_LINE = re.compile(r"[^\r\n]+")
_ESCAPE = re.compile(r"\\(?:u(.{0,4})|(.))", re.DOTALL)
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_KEY_END = re.compile(r"[=: \t\f]")


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Split text into logical lines as Java's `Properties.LineReader` does; (start index, line).

    `Properties.store` never continues a line, so the files Hudi writes take the line-at-a-time
    path; only a file with a continued line walks it character by character (about ten times
    slower: 1.1 ms of a 2.7 KB fixture file, most of `runner import`'s time per table).
    """
    lines = _uncontinued_lines(text)
    return _continued_lines(text) if lines is None else lines


def _uncontinued_lines(text: str) -> list[tuple[int, str]] | None:
    """`_continued_lines` of a text in which no line continues: each natural line without its
    leading blanks; blank lines and comments dropped. None when a line does continue (it ends in
    an odd number of backslashes)."""
    lines = []
    for match in _NATURAL_LINE.finditer(text):
        natural = match.group()
        if natural.endswith("\\") and (len(natural) - len(natural.rstrip("\\"))) % 2:
            return None
        line = natural.lstrip(_WHITESPACE)
        if line and line[0] not in "#!":
            lines.append((match.end() - len(line), line))
    return lines


def _continued_lines(text: str) -> list[tuple[int, str]]:
    """`_logical_lines` for any text, continued lines included, one character at a time.

    Blanks are skipped at the start of every natural line of a logical line; `#`/`!` starts a comment
    whenever the logical line is still empty (also right after a lone continuation backslash); an
    empty natural line ends a continuation; the backslash before a line break or the end is dropped.
    """
    lines: list[tuple[int, str]] = []
    chars: list[str] = []
    skip_blanks, after_continuation, backslash = True, False, False
    i, start = 0, 0
    while i < len(text):
        c = text[i]
        i += 1
        if skip_blanks:
            if c in _WHITESPACE or (c in "\r\n" and not after_continuation):
                continue
            skip_blanks = after_continuation = False
        if not chars and c in "#!":
            while i < len(text) and text[i] not in "\r\n":
                i += 1
            skip_blanks = True
            continue
        if c not in "\r\n":
            start = i - 1 if not chars else start
            chars.append(c)
            backslash = c == "\\" and not backslash
        elif not chars:
            skip_blanks = True
        elif backslash and i < len(text):
            chars.pop()
            skip_blanks, after_continuation, backslash = True, True, False
            i += 1 if c == "\r" and text[i] == "\n" else 0
        else:
            lines.append((start, "".join(chars[:-1] if backslash else chars)))
            chars, skip_blanks, backslash = [], True, False
    if chars:
        lines.append((start, "".join(chars[:-1] if backslash else chars)))
    return lines


def _split_key_value(line: str) -> tuple[int, int]:
    """Return (end of the raw key, start of the raw value) in one logical line."""
    first = _KEY_END.search(line)
    if first is not None and "\\" not in line[: first.start()]:  # no escape before it: the key ends there
        key_end, has_separator = first.start(), first.group() in "=:"
    else:
        key_end, has_separator = _escaped_key_end(line)
    value_start = key_end + 1 if key_end < len(line) else key_end
    while value_start < len(line):
        c = line[value_start]
        if c in _WHITESPACE or (c in "=:" and not has_separator):
            has_separator = has_separator or c in "=:"
            value_start += 1
        else:
            break
    return key_end, value_start


def _escaped_key_end(line: str) -> tuple[int, bool]:
    """The first separator no backslash escapes, and whether it is `=` or `:` (not a blank)."""
    escaped = False
    for i, c in enumerate(line):
        if not escaped and c in "=:" + _WHITESPACE:
            return i, c in "=:"
        escaped = c == "\\" and not escaped
    return len(line), False


def _unescape(raw: str, *, path: str, line_no: int) -> str:
    if "\\" not in raw:
        return raw
    saw_unicode = False

    def decoded(match: re.Match[str]) -> str:
        nonlocal saw_unicode
        digits, other = match.group(1), match.group(2)
        if digits is None:
            return _SIMPLE_ESCAPES.get(other, other)
        if not _HEX4.fullmatch(digits):
            raise TableError(
                f"{path}: line {line_no}: malformed \\uXXXX escape: expected 4 hex digits after \\u, "
                f"found {digits!r}",
                path=path,
            )
        saw_unicode = True
        return chr(int(digits, 16))

    # A backslash escapes the one character after it; one at the very end stands for itself.
    joined = _ESCAPE.sub(decoded, raw)
    if saw_unicode:
        # Java escapes a character outside the BMP as a UTF-16 surrogate pair; rejoin the pair.
        joined = joined.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return joined


def format_properties(props: Mapping[str, str]) -> str:
    """Format properties as `java.util.Properties.store` does, without the date comment.

    Escapes `\\ = : # !`, tabs, line breaks and form feeds everywhere, every blank in a key but only
    a leading blank in a value, and every character outside printable ASCII as `\\uXXXX` (a UTF-16
    surrogate pair beyond the BMP). Keys keep the mapping's order. `parse_properties` inverts it.
    """
    return "".join(
        f"{_escape(k, all_spaces=True)}={_escape(v, all_spaces=False)}\n" for k, v in props.items()
    )


def _escape(text: str, *, all_spaces: bool) -> str:
    out: list[str] = []
    for i, c in enumerate(text):
        if c == " ":
            out.append("\\ " if all_spaces or i == 0 else " ")
        elif c in _STORE_ESCAPES:
            out.append(_STORE_ESCAPES[c])
        elif " " < c <= "~":
            out.append(c)
        else:
            units = c.encode("utf-16-be", "surrogatepass")
            out.extend(f"\\u{units[j]:02X}{units[j + 1]:02X}" for j in range(0, len(units), 2))
    return "".join(out)


@dataclass(frozen=True, slots=True)
class TableConfig:
    """The `hoodie.properties` settings the runner relies on, checked and normalized once.

    Args:
        name: `hoodie.table.name`.
        table_type: `hoodie.table.type`.
        version: `hoodie.table.version`, one of `SUPPORTED_TABLE_VERSIONS`.
        timeline_layout_version: `hoodie.timeline.layout.version`: 1 for version 6 (instant files in
            `.hoodie/`), 2 for versions 8+ (`.hoodie/timeline/`, completion time in the file name).
        record_key_fields: `hoodie.table.recordkey.fields`; empty for a keyless table.
        partition_fields: `hoodie.table.partition.fields` without the `:SIMPLE`/`:TIMESTAMP` type
            suffix of custom key generators; empty for a non-partitioned table.
        ordering_fields: `hoodie.table.ordering.fields` (version 9) or the older
            `hoodie.table.precombine.field`: the field(s) deciding which record wins a merge.
        base_file_format: `hoodie.table.base.file.format`, upper case (PARQUET, ORC, HFILE, LANCE).
        timeline_path: `hoodie.timeline.path` below `.hoodie/` for layout 2 (default `timeline`);
            empty for layout 1, whose instants sit directly in `.hoodie/`.
        metadata_partitions: `hoodie.table.metadata.partitions`: the metadata table's built
            partitions (`files`, `column_stats`, ...); empty when the table has no metadata table.
        metadata_partitions_inflight: `hoodie.table.metadata.partitions.inflight`: partitions being built.
        timezone: `hoodie.table.timeline.timezone`, `LOCAL` or `UTC`: the zone instant times are in.
        hive_style_partitioning: partition folders are `field=value`.
        populate_meta_fields: rows carry the `_hoodie_*` columns.
        raw: every property as read.
    """

    name: str
    table_type: TableType
    version: int
    timeline_layout_version: int
    record_key_fields: tuple[str, ...]
    partition_fields: tuple[str, ...]
    ordering_fields: tuple[str, ...]
    base_file_format: str
    timeline_path: str
    metadata_partitions: tuple[str, ...]
    metadata_partitions_inflight: tuple[str, ...]
    timezone: str
    hive_style_partitioning: bool
    populate_meta_fields: bool
    raw: Mapping[str, str] = field(hash=False, repr=False)

    @classmethod
    def parse(cls, text: str, *, path: str) -> TableConfig:
        """Parse `hoodie.properties` text and check it; see `from_properties`."""
        return cls.from_properties(parse_properties(text, path=path), path=path)

    @classmethod
    def from_properties(cls, props: Mapping[str, str], *, path: str) -> TableConfig:
        """Check the table version first, then read and normalize the settings.

        Args:
            props: the parsed `hoodie.properties`.
            path: the file, for error messages.

        Raises:
            UnsupportedTableError: a table version other than 6, 8 or 9, or a timeline layout that
                does not belong to the version.
            TableError: a required key is missing or a value is invalid.
        """
        version = _version(props, path)
        layout = _layout(props, version, path)
        _refuse_external_format(props, path)
        ordering = props.get("hoodie.table.ordering.fields") or props.get("hoodie.table.precombine.field", "")
        return cls(
            name=_required(props, "hoodie.table.name", path),
            table_type=_enum(props, "hoodie.table.type", TableType, path),
            version=version,
            timeline_layout_version=layout,
            record_key_fields=_fields(props.get("hoodie.table.recordkey.fields", "")),
            partition_fields=tuple(
                f.split(":", 1)[0] for f in _fields(props.get("hoodie.table.partition.fields", ""))
            ),
            ordering_fields=_fields(ordering),
            base_file_format=props.get("hoodie.table.base.file.format", "PARQUET").strip().upper()
            or "PARQUET",
            timeline_path=props.get("hoodie.timeline.path", "timeline") if layout == 2 else "",
            metadata_partitions=_fields(props.get("hoodie.table.metadata.partitions", "")),
            metadata_partitions_inflight=_fields(props.get("hoodie.table.metadata.partitions.inflight", "")),
            timezone=_timezone(props, path),
            hive_style_partitioning=_flag(props, "hoodie.datasource.write.hive_style_partitioning", False),
            populate_meta_fields=_flag(props, "hoodie.populate.meta.fields", True),
            raw=MappingProxyType(dict(props)),
        )

    @property
    def timeline_dir(self) -> str:
        """Folder of the active timeline relative to the base path: `.hoodie` or `.hoodie/timeline`."""
        return f".hoodie/{self.timeline_path}" if self.timeline_path else ".hoodie"

    @property
    def is_partitioned(self) -> bool:
        """Whether data files live in partition folders below the base path."""
        return bool(self.partition_fields)


def _required(props: Mapping[str, str], key: str, path: str) -> str:
    value = props.get(key, "").strip()
    if not value:
        raise TableError(
            f"{path}: required property {key} is missing or empty",
            path=path,
            hint="check that this is the hoodie.properties of a Hudi table written by Hudi itself.",
        )
    return value


def _version(props: Mapping[str, str], path: str) -> int:
    raw = _required(props, "hoodie.table.version", path)
    if not (raw.isascii() and raw.isdigit()):
        raise TableError(f"{path}: hoodie.table.version must be a whole number, found {raw!r}", path=path)
    # Python converts at most 4,300 digits; no version has more than a few.
    version = int(raw) if len(raw) <= 20 else -1
    if version not in SUPPORTED_TABLE_VERSIONS:
        shown = raw if len(raw) <= 20 else f"{raw[:20]}... ({len(raw)} digits)"
        raise UnsupportedTableError(
            f"{path}: hoodie.table.version is {shown}; the runner supports table versions "
            f"{', '.join(map(str, SUPPORTED_TABLE_VERSIONS[:-1]))} and {SUPPORTED_TABLE_VERSIONS[-1]}",
            path=path,
            hint="upgrade the table with Hudi 0.14+ (version 6) or Hudi 1.x (versions 8 and 9) first.",
        )
    return version


def _refuse_external_format(props: Mapping[str, str], path: str) -> None:
    """Refuse a table kept in another format through Hudi's pluggable table formats (1.1,
    `HoodieTableFormat`): Hudi hands each commit, clean, archive and savepoint to the format's
    plugin, which keeps that format's own metadata (the file lists its readers read) in step and
    supplies the timeline. The runner calls no plugin, so its cleans and writes would leave that
    metadata behind."""
    found = props.get("hoodie.table.format", "").strip()
    if found and found.lower() != "native":
        raise UnsupportedTableError(
            f"{path}: hoodie.table.format is {found!r}; expected 'native' (Hudi's own format, the default): "
            "Hudi keeps a table of another format in step through that format's plugin on every commit and "
            "clean, which the runner cannot call, so its readers would list deleted files and miss new "
            "records; nothing was read or written",
            path=path,
            hint="maintain this table with Hudi itself (its cleaner and writers call the format's plugin).",
        )


def _layout(props: Mapping[str, str], version: int, path: str) -> int:
    expected = 1 if version == 6 else 2
    raw = props.get("hoodie.timeline.layout.version", "").strip()
    if not raw:
        return expected
    if raw != str(expected):
        raise UnsupportedTableError(
            f"{path}: hoodie.timeline.layout.version is {raw!r} but table version {version} uses "
            f"timeline layout {expected}",
            path=path,
        )
    return expected


def _enum(props: Mapping[str, str], key: str, enum: type[TableType], path: str) -> TableType:
    value = _required(props, key, path)
    try:
        return enum(value.upper())
    except ValueError:
        allowed = " or ".join(m.value for m in enum)
        raise TableError(f"{path}: {key} must be {allowed}, found {value!r}", path=path) from None


def _timezone(props: Mapping[str, str], path: str) -> str:
    value = props.get("hoodie.table.timeline.timezone", "LOCAL").strip().upper() or "LOCAL"
    if value not in ("LOCAL", "UTC"):
        raise TableError(
            f"{path}: hoodie.table.timeline.timezone must be LOCAL or UTC, found {value!r}", path=path
        )
    return value


def _fields(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


def _flag(props: Mapping[str, str], key: str, default: bool) -> bool:
    # Java's Boolean.parseBoolean, as Hudi reads flags: only "true" (any case) is true.
    value = props.get(key)
    return default if value is None or not value.strip() else value.strip().lower() == "true"
