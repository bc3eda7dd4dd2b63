"""`runner.write`'s arguments checked for their kind, before the project is read or anything created.

A notebook user passes what they have at hand: a pandas DataFrame, one RecordBatch, options as a
string, a join's result that names its key twice. Left to the writer, each became an
AttributeError, ValueError or KeyError from deep inside it (or, for a column named twice, a table
created with that schema); here each is one `RefusedError` naming the argument, what was expected,
what was found and the conversion that fixes it.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence

from runner.errors import RefusedError
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
