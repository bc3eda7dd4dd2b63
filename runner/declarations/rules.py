"""Checks a JSON Schema cannot express: they need the merged defaults or more than one file.

- A retention field must belong to the table's effective policy (`runner.declarations.policies`
  says which field each policy owns). Only the table's own fields are checked: a project may set
  defaults for every policy and let each table pick one.
- `small_file_limit` must be below `max_file_size` after merging (0 turns small files off). The
  problem points at the table's own field when it set one, else at the project default, so one bad
  default is reported once rather than once per table.
- Table names are unique, and no two tables share a location or lie one inside the other, after
  normalising the path and following the symbolic links that exist: the outer table's maintenance
  would otherwise see the inner table's files.
- With `allowed_roots`, every table lies under one of them, both as written and where its symbolic
  links lead.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from runner.declarations.merge import Setting
from runner.declarations.model import CleanPolicyName, Source
from runner.declarations.paths import is_under, location_key, real_location
from runner.declarations.policies import POLICY_RULES
from runner.declarations.sizes import SPARK_MIN_EXECUTOR_MEMORY, format_size, spark_size_bytes
from runner.declarations.yaml_io import Loaded
from runner.errors import Problem


@dataclass(frozen=True, slots=True)
class Located:
    """A table file with the name and resolved location it declares (either may be unknown).

    `real` is the location with its symbolic links followed (`paths.real_location`); when left
    out it is worked out from `location`.
    """

    doc: Loaded
    name: str | None
    location: str | None
    real: str | None = None


def policy_problems(doc: Loaded, settings: Mapping[str, Setting]) -> list[Problem]:
    """Retention fields the table sets that its effective cleaning policy ignores."""
    policy = settings["clean.policy"]
    assert isinstance(policy.value, CleanPolicyName)
    problems = []
    for other in POLICY_RULES.values():
        own = settings[f"clean.{other.field}"]
        if other.name is policy.value or own.source is not Source.TABLE:
            continue
        message = (f"applies only to policy {other.name}, but this table's policy is {policy.value} "
                   f"({policy.origin()}); remove it, or set clean.policy: {other.name}")
        problems.append(doc.problem(("clean", other.field), message))
    return problems


def spark_problems(settings: Mapping[str, Setting], owner: Source) -> list[Problem]:
    """A per-table Spark setting Spark itself would refuse, reported where `owner` set it."""
    memory = settings["spark.executor_memory"]
    if memory.source is not owner or memory.value is None:
        return []
    if isinstance(memory.value, int):  # the schema admits it only to say this
        return [_at(memory, f"expected a size with a unit, such as 8g or 8192m (Spark would read a bare "
                            f"{memory.value} as {memory.value} MiB), got {memory.value}")]
    assert isinstance(memory.value, str)
    if spark_size_bytes(memory.value) < SPARK_MIN_EXECUTOR_MEMORY:
        return [_at(memory, f"must be at least 450m (Spark refuses smaller executors), got {memory.value}")]
    return []


def sizing_problems(settings: Mapping[str, Setting], owner: Source) -> list[Problem]:
    """Size settings that contradict each other, reported where `owner` set one of them.

    Args:
        settings: effective settings of a table (or of the project defaults alone).
        owner: report only if this source set max_file_size or small_file_limit.
    """
    largest, small = settings["file_sizing.max_file_size"], settings["file_sizing.small_file_limit"]
    assert isinstance(largest.value, int) and isinstance(small.value, int)
    if largest.source is owner and largest.value < 1:
        return [_at(largest, "must be at least 1 byte, got 0")]
    if small.value == 0 or small.value < largest.value:
        return []
    if small.source is owner:
        return [_at(small, f"must be less than max_file_size ({_size(largest)}, {largest.origin()}), "
                           f"got {_size(small)}; lower it, or write 0 to turn small-file handling off")]
    if largest.source is owner:
        return [_at(largest, f"must be greater than small_file_limit ({_size(small)}, {small.origin()}), "
                             f"got {_size(largest)}; raise it, or lower small_file_limit")]
    return []


def duplicate_problems(tables: Sequence[Located]) -> list[Problem]:
    """Tables that share a name, or a location after normalising; each file names the others."""
    problems = []
    for name, group in _groups(tables, lambda t: t.name).items():
        for table in group:
            others = _files(group, table)
            problems.append(table.doc.problem(("name",), f'duplicate table name "{name}", also declared in '
                                              f"{others}; table names must be unique"))
    for location, group in _groups(tables, _compared).items():
        for table in group:
            others = ", ".join(_described(t) for t in group if t is not table)
            problems.append(table.doc.problem(("path",), f"same location as {others}: {location}; "
                                              "each table needs its own path"))
    return problems + _nesting_problems(tables)


def _compared(table: Located) -> str | None:
    if table.location is None:
        return None
    return location_key(table.real if table.real is not None else real_location(table.location))


def _described(table: Located) -> str:
    return f'"{table.name}" ({table.doc.file})' if table.name else table.doc.file


def _nesting_problems(tables: Sequence[Located]) -> list[Problem]:
    """Tables whose location lies inside another table's; both files are told."""
    by_key: dict[str, list[Located]] = defaultdict(list)
    for table in tables:
        key = _compared(table)
        if key is not None:
            by_key[key].append(table)
    problems = []
    for key, inner_group in by_key.items():
        for outer_key in _ancestors(key):
            for outer in by_key.get(outer_key, ()):
                for inner in inner_group:
                    problems.append(inner.doc.problem(("path",), (
                        f"{key} lies inside the location of table {_described(outer)}: {outer_key}; "
                        "the outer table's maintenance would treat this table's files as its own. "
                        "Move one table so that neither folder contains the other")))
                    problems.append(outer.doc.problem(("path",), (
                        f"{outer_key} contains the location of table {_described(inner)}: {key}; "
                        "the outer table's maintenance would treat that table's files as its own. "
                        "Move one table so that neither folder contains the other")))
    return problems


def _ancestors(key: str) -> list[str]:
    """Every proper ancestor of a compared location that could itself be a table location."""
    scheme, sep, rest = key.partition("://")
    if not sep:
        scheme, rest = "", key
    parts = rest.split("/")
    prefix = f"{scheme}://" if sep else ""
    # For URIs the first part is the bucket; a bucket itself can be a table location.
    first = 1 if sep else 2
    return [prefix + "/".join(parts[:end]) for end in range(first, len(parts))]


def root_problems(table: Located, roots: Sequence[str],
                  real_of: Callable[[str], str] = real_location) -> list[Problem]:
    """The table's location if it lies outside every allowed root (no roots: anything goes).

    `real_of` follows links (`paths.RealLocations` shares that work between the tables of a load).
    """
    if not roots or table.location is None:
        return []
    outside = roots_refusal(table.location, roots, real_of)
    return [] if outside is None else [table.doc.problem(("path",), outside)]


def roots_refusal(location: str, roots: Sequence[str],
                  real_of: Callable[[str], str] = real_location) -> str | None:
    """Why `location` is outside every allowed root, as written or once its links are followed;
    None when it is inside one (or no roots are set)."""
    if not roots:
        return None
    listed = ", ".join(roots)
    fix = "fix the path, or add its root to allowed_roots in project.yml"
    if not any(is_under(location, root) for root in roots):
        return f"resolves to {location}, outside the allowed roots ({listed}); {fix}"
    real = real_of(location)
    if not any(is_under(real, real_of(root)) for root in roots):
        return (f"resolves to {location}, whose symbolic links lead to {real}, outside the allowed roots "
                f"({listed}); {fix}")
    return None


def _groups(tables: Iterable[Located], key: Callable[[Located], str | None]) -> dict[str, list[Located]]:
    grouped: dict[str, list[Located]] = defaultdict(list)
    for table in tables:
        value = key(table)
        if value is not None:
            grouped[value].append(table)
    return {value: group for value, group in grouped.items() if len(group) > 1}


def _files(group: Sequence[Located], table: Located) -> str:
    return ", ".join(t.doc.file for t in group if t is not table)


def _size(setting: Setting) -> str:
    assert isinstance(setting.value, int)
    return format_size(setting.value)


def _at(setting: Setting, message: str) -> Problem:
    assert setting.doc is not None
    return setting.doc.problem(setting.path, message)
