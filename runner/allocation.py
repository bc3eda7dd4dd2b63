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
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TypeVar

# Open blocks of this module, across threads (`runner apply --threads` applies tables at once): the
# collector is paused while a `bulk_allocation` block is open and no `collecting` block is, and the
# last block to close puts it back. Counting, rather than each block restoring what it found, keeps
# one thread's exit from undoing another's block (a `collecting` that ended after the pausing block
# had closed would otherwise leave the collector paused for good).
_lock = threading.Lock()
_open = {"bulk": 0, "collecting": 0}


def _settle() -> None:
    """Turn the collector on or off as the open blocks say (called with `_lock` held)."""
    if _open["bulk"] and not _open["collecting"]:
        gc.disable()
    else:
        gc.enable()


@contextmanager
def _counted(kind: str, joins: Callable[[], bool]) -> Iterator[None]:
    """Count the block among the open blocks of `kind` if `joins()` says so (asked under the lock),
    and settle the collector as it opens and as it closes."""
    with _lock:
        ours = joins()
        if ours:
            _open[kind] += 1
            _settle()
    try:
        yield
    finally:
        if ours:
            with _lock:
                _open[kind] -= 1
                _settle()


def bulk_allocation() -> AbstractContextManager[None]:
    """Pause the cyclic collector for the block, if it was running; nests and tolerates threads.

    The collector runs again once every open block (of any thread) has closed, never paused for
    good; one that someone else paused before any block opened is left as it was.
    """
    return _counted("bulk", lambda: _open["bulk"] > 0 or _open["collecting"] > 0 or gc.isenabled())


def collecting() -> AbstractContextManager[None]:
    """Run the block with the cyclic collector on, even inside a `bulk_allocation`: for work that
    runs for minutes and makes garbage of its own, some of it in cycles (a Spark job, a rewrite),
    which must not pile up while the collector is paused. Outside any block it changes nothing."""
    return _counted("collecting", lambda: _open["bulk"] > 0)


T = TypeVar("T")


def quick_init(cls: type[T]) -> type[T]:
    """Give a frozen, slotted dataclass a faster `__init__` with the same signature and defaults.

    The `__init__` that `dataclass(frozen=True)` writes assigns each field through
    `object.__setattr__` (the class's own `__setattr__` refuses), looked up afresh per field; this
    one calls each slot's own setter, bound once when the class is made. The instances are the
    same: still frozen to every later assignment, equal, hashed and shown as before. Planning a
    clean makes several such values per file (a parsed base file, its slice, the file to delete,
    the clean plan's record): measured on this project's machine, 50,000 `BaseFile`s in a loop,
    about 1.7 against 1.2 us a value (bench/README.md, "clean: the in-process round").

    Apply it above `@dataclass(frozen=True, slots=True)`, to a class with positional fields only,
    no default factory and no `__post_init__` (so no `InitVar` either): each refused here.
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
