"""`bulk_allocation`: build a large, acyclic object graph without the cyclic collector's help;
`quick_init`: a cheaper constructor for the frozen values made once per file.

Planning a clean builds a few objects per file (listing entries, parsed names, slices, the files to
delete, the clean plan's records): hundreds of thousands for a large table. CPython's cyclic garbage
collector runs every few hundred allocations and, as its older generations fill up, re-walks the
growing set of live objects each time, only to find nothing: these objects hold no reference
cycles, and reference counting frees them as usual. Measured on a 50,000-file table, the collector
was about a quarter of `plan_one`'s CPU (bench/README.md, "clean"). A local bulk delete
(`LocalStorage.delete_many`) is the same kind of work: a result per file, and a full collection
there walked the whole heap, the clean plan included, while the delete threads waited for the GIL.

Pausing it is safe for that reason: nothing is leaked, and any cycle made meanwhile is collected
at the first collection after the block.
"""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar


@contextmanager
def bulk_allocation() -> Iterator[None]:
    """Pause the cyclic collector for the block, if it was running; nests and tolerates threads.

    Only the call that paused it resumes it, so a nested block, or one in a thread that found it
    already paused, never turns it back on early for good; if two threads race, the collector ends
    running, never paused for good.
    """
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


@contextmanager
def collecting() -> Iterator[None]:
    """Run the block with the cyclic collector on, even inside a `bulk_allocation`, and put it
    back as it was: for work that runs for minutes and makes garbage of its own, some of it in
    cycles (a Spark job, a rewrite), which must not pile up while the collector is paused."""
    paused = not gc.isenabled()
    if paused:
        gc.enable()
    try:
        yield
    finally:
        if paused:
            gc.disable()


T = TypeVar("T")


def quick_init(cls: type[T]) -> type[T]:
    """Give a frozen, slotted dataclass a faster `__init__` with the same signature and defaults.

    The `__init__` that `dataclass(frozen=True)` writes assigns each field through
    `object.__setattr__` (the class's own `__setattr__` refuses), looked up afresh per field; this
    one calls each slot's own setter, bound once when the class is made. The instances are the
    same: still frozen to every later assignment, equal, hashed and shown as before. Planning a
    clean makes several such values per file (a parsed base file, its slice, the file to delete,
    the clean plan's record): measured on this project's machine, about 2.0 against 1.5 us a value
    (bench/README.md, "clean: the in-process round").

    Apply it above `@dataclass(frozen=True, slots=True)`, to a class with no `__post_init__`, no
    `InitVar` and no default factory (each refused here, not silently skipped).
    """
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    if not (params.frozen and "__slots__" in cls.__dict__) or hasattr(cls, "__post_init__"):
        raise TypeError(f"quick_init needs a frozen, slotted dataclass without __post_init__, not {cls.__name__}")
    namespace: dict[str, object] = {}
    arguments, body = [], []
    for index, field in enumerate(fields):
        if not field.init or field.default_factory is not dataclasses.MISSING or field.kw_only:
            raise TypeError(f"quick_init: field {cls.__name__}.{field.name} is not a plain positional field")
        if field.default is dataclasses.MISSING:
            arguments.append(field.name)
        else:
            namespace[f"_default{index}"] = field.default
            arguments.append(f"{field.name}=_default{index}")
        namespace[f"_set{index}"] = cls.__dict__[field.name].__set__
        body.append(f"    _set{index}(self, {field.name})")
    exec(f"def __init__(self, {', '.join(arguments)}):\n" + "\n".join(body or ["    pass"]), namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"  # type: ignore[attr-defined]
    type.__setattr__(cls, "__init__", init)
    return cls
