"""`runner.write`'s arguments checked for their kind, before the project is read or anything created.

A notebook user passes what they have at hand: a pandas DataFrame, one RecordBatch, options as a
string, a join's result that names its key twice. Left to the writer, each became an
AttributeError, ValueError or KeyError from deep inside it (or, for a column named twice, a table
created with that schema); here each is one `RefusedError` naming the argument, what was expected,
what was found and the conversion that fixes it.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import NoReturn

from runner.declarations.loader import PROJECT_FILE
from runner.declarations.model import Project
from runner.errors import RefusedError
from runner.selection import closest, did_you_mean
from runner.writer.schema import META_COLUMNS

_BUILD = "build a pyarrow.Table (pyarrow.table(...)) or a Spark DataFrame from the records."


def kind_of(value: object) -> str:
    """`None`, `a str ('snappy')`, `an int (5)`, `a list`, `a pandas.core.frame.DataFrame`: what a
    message says was found, short enough for one line (only a scalar's value is shown)."""
    if value is None:
        return "None"
    kind = type(value)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    article = "an" if name[0] in "aeiou" else "a"
    shown = f" ({value!r})" if isinstance(value, str | int | float | bool) and len(repr(value)) <= 40 else ""
    return f"{article} {name}{shown}"


def check_project_dir(project_dir: object) -> None:
    if not isinstance(project_dir, str | os.PathLike):
        raise RefusedError(f"runner.write(project_dir=...): expected the project folder as a str or os.PathLike, "
                           f"got {kind_of(project_dir)}; nothing was written")
    # Said here, in runner.write's terms: the loader's own words name the CLI's --project-dir.
    folder = os.fspath(project_dir)
    if not os.path.exists(folder):
        found = "does not exist"
    elif not os.path.isdir(folder):
        found = "is a file"
    elif not os.path.isfile(os.path.join(folder, PROJECT_FILE)):
        found = f"has no {PROJECT_FILE}"
    else:
        return
    raise RefusedError(f"runner.write(project_dir=...): {project_dir} {found}; expected the folder holding the "
                       f"project's {PROJECT_FILE}; nothing was written",
                       hint=f"pass project_dir= the project's folder (relative paths are read from the current "
                            f"folder, {os.getcwd()}).")


def check_table_and_target(table: object, target: object) -> None:
    if not isinstance(table, str):
        raise RefusedError(f"runner.write(table=...): expected the declared table's name as a str, got "
                           f"{kind_of(table)}; nothing was written")
    if target is not None and (not isinstance(target, str) or not target.strip()):
        found = "an empty str" if isinstance(target, str) else kind_of(target)
        raise RefusedError("runner.write(target=...): expected a target name from project.yml's targets: as a str, "
                           f"or None for the project's own settings, got {found}; nothing was written")


def unknown_table(project: Project, table: str) -> NoReturn:
    """The refusal of a table name the project does not declare, with the name the user most likely meant."""
    for decl in project.tables:
        # A path or a file name where the name goes: what else a user has at hand for the table.
        given = os.path.normpath(os.path.join(project.directory, table))
        what = ("path" if given == decl.path or table.rstrip("/") == decl.path else
                "declaration" if given == os.path.join(project.directory, decl.source_file) else None)
        if what is not None:
            raise RefusedError(f"runner.write(table=...): {table!r} is the {what} of the table named {decl.name!r}; "
                               "runner.write takes the table's name; nothing was written",
                               hint=f'write to "{decl.name}".')
    names = [t.name for t in project.tables]
    close = closest(table, names)
    # A new declaration is offered only under a name a declaration can have.
    new = (f"add tables/{table}.yml with `name: {table}`, a `path:` and a `table:` block."
           if re.fullmatch(r"[a-z][a-z0-9_]*", table) else None)
    if close is not None:
        hint = f'write to "{close}"' + (f", or {new}" if new else ".")
    else:
        hint = new or ("write to a declared table: a name is a lowercase letter followed by lowercase letters, "
                       "digits or underscores.")
    raise RefusedError(  # a typo is likelier than a missing declaration: name the near miss first
        f"No table named {table!r} is declared in {project.directory}; declared: {', '.join(names) or 'none'}"
        f"{did_you_mean(table, names)}.", hint=hint)


def record_columns(df: object) -> list[str]:
    """The column names of the records `runner.write` was given, or a refusal of another kind of value.

    A PySpark DataFrame (classic or Spark Connect) is recognised by its class, so that pyspark is
    never imported to ask, as the Arrow path promises."""
    import pyarrow as pa

    if isinstance(df, pa.Table | pa.RecordBatchReader):
        return list(df.schema.names)
    if any(c.__name__ == "DataFrame" and c.__module__.startswith("pyspark.sql") for c in type(df).__mro__):
        return list(df.columns)  # type: ignore[attr-defined]
    if type(df).__name__ == "DataFrame" and type(df).__module__.startswith("pandas"):
        fix = "pass pyarrow.Table.from_pandas(df, preserve_index=False), or spark.createDataFrame(df)."
    elif isinstance(df, pa.RecordBatch):
        fix = "pass pyarrow.Table.from_batches([batch])."
    else:
        fix = _BUILD
    raise RefusedError("runner.write(df, ...): expected the records as a PySpark DataFrame, a pyarrow.Table or a "
                       f"pyarrow.RecordBatchReader, got {kind_of(df)}; nothing was written", hint=fix)


def refuse_duplicate_columns(names: Sequence[str]) -> None:
    """A column named twice would be written into the table's schema twice (a new table's create
    schema included); Hudi's meta columns are dropped by name whatever their count."""
    counts = Counter(n for n in names if n not in META_COLUMNS)
    twice = [(name, count) for name, count in counts.items() if count > 1]
    if twice:
        name, count = twice[0]
        listed = ", ".join(repr(n) for n in names)
        raise RefusedError(
            f"runner.write: the records name the column {name!r} {count} times (columns: {listed}); a Hudi "
            "table's columns have one name each; nothing was written",
            hint="rename or drop the duplicates before writing (a join keeps both sides' columns).",
        )


def refuse_clashing_names(df: object) -> None:
    """Two names a reader takes for one column: at any struct level, names equal but for case (or
    exactly equal inside a struct), a top-level one also against Hudi's meta columns.

    Spark resolves column names without case by default (`spark.sql.caseSensitive` false), as
    Hive's metastore does: a table written with `name` and `NAME` failed every Spark read with
    `The column name already exists`. Run after `refuse_duplicate_columns` (exact top-level
    repeats) and `record_columns` (the records' kind), before anything is created."""
    for level in _struct_levels(df):
        seen: dict[str, str] = {}
        for path, name in level:
            folded = name.lower()  # as Spark's resolver: toLowerCase(Locale.ROOT)
            if folded in seen:
                raise RefusedError(
                    f"runner.write: the records name the columns {seen[folded]!r} and {path!r}, which Spark and Hive "
                    "read as one column (names are compared without case, and a struct's fields have one name "
                    "each); nothing was written",
                    hint="rename or drop the duplicates before writing (a join keeps both sides' columns).",
                )
            seen[folded] = path


_AVRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def refuse_non_avro_names(df: object) -> None:
    """A column (or nested field) whose name is not an Avro name: Hudi keeps the table's schema as
    Avro (commit `extraMetadata.schema`, file footers), Hudi's writer fails building it (Spark's
    Avro conversion validates names) and its readers parsing it; the Avro specification's names are
    ASCII, which the hudi reader holds to (a `Größe` column fails its read of the whole table)."""
    for level in _struct_levels(df):
        for path, name in level:
            if not _AVRO_NAME.fullmatch(name):
                raise RefusedError(
                    f"runner.write: column {path!r} is not an Avro name (a letter or '_' first, then letters, digits "
                    "or '_', ASCII only), so Hudi and the hudi reader could not parse the table's schema; nothing was "
                    "written",
                    hint="rename the column before writing (Spark: withColumnRenamed, or a struct's fields by cast).",
                )


def _struct_levels(df: object) -> Iterator[list[tuple[str, str]]]:
    """Each struct level of the records' schema as (dotted path, name) pairs; the top level starts
    with Hudi's meta columns, which the writer puts in every file (records' own are dropped by name)."""
    import pyarrow as pa

    schema = df.schema  # type: ignore[attr-defined]  # a pyarrow schema or a Spark StructType
    top = [(name, name) for name in META_COLUMNS]
    arrow = isinstance(schema, pa.Schema)
    fields = [(f.name, f.type) for f in schema] if arrow else [(f.name, f.dataType) for f in schema.fields]
    top += [(name, name) for name, _ in fields if name not in META_COLUMNS]
    yield top
    pending = [(name, kind) for name, kind in fields if name not in META_COLUMNS]
    while pending:
        prefix, kind = pending.pop()
        children = _children(kind, arrow)
        if children is not None:
            yield [(f"{prefix}.{name}", name) for name, _ in children]
            pending.extend((f"{prefix}.{name}", child) for name, child in children)
        pending.extend((prefix, inner) for inner in _elements(kind, arrow))


def _children(kind: object, arrow: bool) -> list[tuple[str, object]] | None:
    """A struct type's fields, or None for any other type."""
    import pyarrow as pa

    if arrow:
        if not isinstance(kind, pa.StructType):
            return None
        return [(kind.field(i).name, kind.field(i).type) for i in range(kind.num_fields)]
    fields = getattr(kind, "fields", None)  # pyspark's StructType, without importing pyspark
    return None if fields is None else [(f.name, f.dataType) for f in fields]


def _elements(kind: object, arrow: bool) -> list[object]:
    """The types a list or map holds (whose structs are checked too)."""
    import pyarrow as pa

    if arrow:
        if isinstance(kind, pa.MapType):
            return [kind.key_type, kind.item_type]
        if isinstance(kind, pa.ListType | pa.LargeListType | pa.FixedSizeListType):
            return [kind.value_type]
        return []
    return [t for t in (getattr(kind, a, None) for a in ("elementType", "keyType", "valueType")) if t is not None]
