"""`--select` / `--exclude`: which declared tables a command works on.

Grammar (dbt's, cut down to what tables need). Each argument is one spec; a table is selected if it
matches any `--select` spec and no `--exclude` spec. An empty `--select` selects every table.

- `orders`, `orders_*`: table name, or an fnmatch glob over names.
- `tag:gold`, `owner:crm`: a tag or the owner (globs allowed).
- `path:tables/finance/*`: a glob over the declaration file, relative to the project directory;
  a folder (`path:tables/finance`) matches every file below it.
- `state:modified`: tables whose declaration differs from the git ref given with `--state`,
  including new files not yet committed. A change to project.yml modifies every table, since any
  default may have changed.
- `tag:gold,owner:crm`: a comma joins specs that must all match (intersection).

A spec that matches no table is an error, with a did-you-mean when a name is close: a typo must
fail a CI job rather than select nothing, and a typo in `--exclude` must not quietly let the table
it meant through. So is a selection that leaves no table, every table its `--select` picks
excluded (`--exclude '*'`, `--select orders --exclude orders`): a command that then did nothing
and exited 0 would hide the selector that went wrong, as a `--select` matching nothing would. The
exception is `state:modified`, which rightly matches nothing when no declaration changed: a
selection with such a spec, on either side, may be empty.
"""

from __future__ import annotations

import difflib
import fnmatch
import os
import re
import subprocess
from collections.abc import Callable, Iterable, Sequence

from runner.declarations.model import Project, TableDeclaration
from runner.errors import SelectionError

PROJECT_FILE = "project.yml"
_PREFIXES = ("tag", "owner", "path", "state")
_GRAMMAR = "a table name or glob, tag:NAME, owner:NAME, path:GLOB or state:modified"
_SYNTAX = (f"give one spec per argument, each {_GRAMMAR}; a comma joins parts that must all match "
           "(tag:gold,owner:crm), and a repeated --select adds tables (--select a --select b).")
# dbt's graph operators around a spec: `+orders`, `2+orders`, `orders+`, `orders+1`, `@orders`.
_GRAPH = re.compile(r"^(?P<op>@|\d*\+)?(?P<spec>.*?)(?P<after>\+\d*)?$", re.DOTALL)

Matcher = Callable[[TableDeclaration], bool]


def select_tables(
    project: Project, select: Sequence[str], exclude: Sequence[str], state_ref: str | None
) -> tuple[TableDeclaration, ...]:
    """The tables of `project` that `select` picks and `exclude` does not, in project order.

    Args:
        project: a loaded project.
        select: specs to include; empty means every table.
        exclude: specs to leave out.
        state_ref: the git ref `state:modified` compares against (`--state`).

    Raises:
        SelectionError: a spec has an unknown prefix or is empty, or matches no table (unless it
            uses `state:modified`); `state:modified` was used without `--state`, outside a git
            repository, or with a ref git does not know; `--state` was given without `state:modified`.
    """
    _refuse_unused_state(state_ref, [*select, *exclude])
    state = _State(project.directory, state_ref)
    included = [_parse(spec, state) for spec in select]
    excluded = [_parse(spec, state) for spec in exclude]
    _refuse_unmatched(project, [("--select", s, m) for s, m in zip(select, included, strict=True)]
                      + [("--exclude", s, m) for s, m in zip(exclude, excluded, strict=True)])
    picked = [table for table in project.tables if not included or any(match(table) for match in included)]
    chosen = tuple(table for table in picked if not any(match(table) for match in excluded))
    if picked and not chosen and not any("state:" in spec for spec in [*select, *exclude]):
        who = (f"{_quoted('--select', select)} picks {_listed([t.name for t in picked])}" if select
               else "every table in the project")
        _refuse_nothing_left(picked, who, list(zip(exclude, excluded, strict=True)), "nothing was done")
    return chosen


def refuse_excluding_all(project: Project, candidates: Sequence[TableDeclaration], exclude: Sequence[str],
                         state_ref: str | None, *, covered_by: str) -> None:
    """Raise when `exclude` leaves none of `candidates` (the tables a saved plan covers), as
    `select_tables` does for the tables `--select` picks; `state:modified` may leave none.

    Args:
        project: the loaded project.
        candidates: the tables the command would work on but for `exclude`.
        exclude: the `--exclude` specs.
        state_ref: `--state`.
        covered_by: what chose `candidates`, such as "the plan file".

    Raises:
        SelectionError: `candidates` is not empty and `exclude` (without `state:modified`) left none.
    """
    if not candidates or not exclude or any("state:" in spec for spec in exclude):
        return
    state = _State(project.directory, state_ref)
    excluded = [(spec, _parse(spec, state)) for spec in exclude]
    if all(any(match(table) for _, match in excluded) for table in candidates):
        who = f"{covered_by} covers {_listed([t.name for t in candidates])}"
        _refuse_nothing_left(list(candidates), who, excluded, "nothing was applied")


def _refuse_nothing_left(picked: list[TableDeclaration], who: str, exclude: list[tuple[str, Matcher]],
                         outcome: str) -> None:
    """Every table of `picked` is excluded: name each with the `--exclude` spec that took it."""
    by_spec: dict[str, list[str]] = {}
    for table in picked:
        spec = next(spec for spec, match in exclude if match(table))
        by_spec.setdefault(spec, []).append(table.name)
    which = "; ".join(f'{_listed(names)} by "{spec}"' for spec, names in by_spec.items())
    excluding = _quoted("--exclude", [spec for spec, _ in exclude])
    if who.startswith("every "):
        where = f"{excluding} excludes {who}"
    else:
        where = f"{who}, and {excluding} excludes {'it' if len(picked) == 1 else 'them all'}"
    raise SelectionError(f"no table is left: {where} ({which}); {outcome}",
                         hint="narrow --exclude (or widen --select): a selection that leaves no table is "
                              "an error, as a --select that matches none is.")


def _quoted(option: str, specs: Sequence[str]) -> str:
    return option + " " + " ".join(f'"{spec}"' for spec in specs)


def _listed(names: Sequence[str], most: int = 10) -> str:
    shown = ", ".join(names[:most])
    return shown if len(names) <= most else f"{shown} and {len(names) - most} more"


def _refuse_unused_state(state_ref: str | None, specs: Sequence[str]) -> None:
    """`--state` narrows nothing by itself: with its `state:modified` forgotten, a command would
    run on every table the other selectors pick (an unattended apply on the whole project)."""
    if state_ref is None or any("state:" in spec for spec in specs):
        return
    raise SelectionError(f"--state {state_ref} is used only by a state:modified selector, and neither --select nor "
                         "--exclude has one; nothing was done",
                         hint=f"add --select state:modified (or drop --state {state_ref}).")


def _refuse_unmatched(project: Project, specs: list[tuple[str, str, Matcher]]) -> None:
    unmatched = [(option, spec) for option, spec, match in specs
                 if "state:" not in spec and not any(match(table) for table in project.tables)]
    for option, spec in unmatched:
        habit = _dbt_habit(option, spec)
        if habit is not None:
            raise SelectionError(f'{option} "{spec}" matches no table: {habit}', hint=_SYNTAX)
    problems = [f'{option} "{spec}" matches no table{_suggestion(project, spec)}' for option, spec in unmatched]
    if problems:
        names = ", ".join(table.name for table in project.tables) or "none"
        raise SelectionError("; ".join(problems) + f"; nothing was done (tables in the project: {names})",
                             hint="fix the selector; `runner ls` lists every table with its tags and owner.")


def _dbt_habit(option: str, spec: str) -> str | None:
    """What a dbt user meant by `spec` and how the runner says it, or None: graph operators (tables
    have no lineage) and several specs in one argument (dbt splits on spaces; the runner takes each
    argument whole, so that a tag or owner may hold a space)."""
    words = spec.split()
    if len(words) > 1:
        return (f"it holds {len(words)} specs separated by spaces, and each spec is its own argument: "
                + " ".join(f"{option} {word}" for word in words))
    graph = _GRAPH.match(spec.strip())
    if graph is None or not (graph["op"] or graph["after"]) or not graph["spec"]:
        return None
    sign = "@" if graph["op"] == "@" else "+"
    return (f'"{sign}" is dbt\'s graph operator, and tables have no parents or children; '
            f'select "{graph["spec"]}" itself')


def _suggestion(project: Project, spec: str) -> str:
    """A did-you-mean for the first part of `spec` that matches nothing on its own."""
    tables = project.tables
    for part in (p.strip() for p in spec.split(",")):
        prefix, colon, value = part.partition(":")
        if not colon:
            prefix, value = "", part
        candidates = {
            "": [t.name for t in tables],
            "tag": sorted({tag for t in tables for tag in t.tags}),
            "owner": sorted({t.owner for t in tables if t.owner}),
            "path": [t.source_file for t in tables],
        }.get(prefix, [])
        matcher = _path_matcher(value) if prefix == "path" else None
        if any(fnmatch.fnmatchcase(c, value) for c in candidates) or (
                matcher is not None and any(matcher(t) for t in tables)):
            continue
        hint = did_you_mean(value, candidates)
        return hint.replace('"', f'"{prefix}:', 1) if hint and prefix else hint
    return " (each part matches some table, but no table matches all of them)" if "," in spec else ""


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """` (did you mean "orders"?)` for the closest candidate, or "" when none is close."""
    close = closest(word, candidates)
    return f' (did you mean "{close}"?)' if close is not None else ""


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to `word`, None when none is close: first one equal but for case
    (`Region` for `region`, which difflib ranks below any near spelling, as it compares case),
    else difflib's nearest spelling."""
    options = list(candidates)
    close = [o for o in options if o.lower() == word.lower() and o != word][:1] or difflib.get_close_matches(
        word, options, n=1)
    return close[0] if close else None


def did_you_mean_any(words: Iterable[str], candidates: Iterable[str]) -> str:
    """`did_you_mean` for the first of `words` that is not a candidate but near one (a list of
    declared columns against the real ones), or ""."""
    options = list(candidates)
    return next((hint for word in words if word not in options and (hint := did_you_mean(word, options))), "")


def did_you_mean_columns(declared: object, found: object) -> str:
    """`did_you_mean_any` for a `table:` block's column setting (a name, or a list of names)
    against what hoodie.properties has; "" for other settings (`type`, `meta_fields`)."""
    return did_you_mean_any(_column_names(declared), _column_names(found))


def _column_names(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value] if isinstance(value, list | tuple) else []


def _parse(spec: str, state: _State) -> Matcher:
    parts = [_parse_one(part.strip(), spec, state) for part in spec.split(",")]
    return lambda table: all(match(table) for match in parts)


def _parse_one(part: str, spec: str, state: _State) -> Matcher:
    if not part:
        raise SelectionError(f'empty selector in "{spec}"; expected {_GRAMMAR}')
    prefix, colon, value = part.partition(":")
    if not colon:
        return lambda table: fnmatch.fnmatchcase(table.name, part)
    if prefix not in _PREFIXES:
        habit = _dbt_habit("--select", spec)
        if habit is not None:
            raise SelectionError(f'"{spec}" cannot be read: {habit}', hint=_SYNTAX)
        raise SelectionError(f'unknown selector "{prefix}:" in "{spec}"; expected {_GRAMMAR}')
    if not value:
        raise SelectionError(f'"{prefix}:" needs a value in "{spec}"; expected {_GRAMMAR}')
    if prefix == "tag":
        return lambda table: any(fnmatch.fnmatchcase(tag, value) for tag in table.tags)
    if prefix == "owner":
        return lambda table: table.owner is not None and fnmatch.fnmatchcase(table.owner, value)
    if prefix == "path":
        return _path_matcher(value)
    if value != "modified":
        raise SelectionError(f'unknown state selector "{part}"; expected state:modified')
    return state.modified


def _path_matcher(pattern: str) -> Matcher:
    pattern = pattern.removeprefix("./").rstrip("/")

    def match(table: TableDeclaration) -> bool:
        return fnmatch.fnmatchcase(table.source_file, pattern) or table.source_file.startswith(pattern + "/")

    return match


class _State:
    """Which declaration files differ from a git ref; asks git once, on first use."""

    def __init__(self, directory: str, ref: str | None) -> None:
        self.directory = directory
        self.ref = ref
        self.changed: frozenset[str] | None = None

    def modified(self, table: TableDeclaration) -> bool:
        if self.changed is None:
            self.changed = self._changed_files()
        if PROJECT_FILE in self.changed:
            return True
        # A declaration read through a linked folder (tables/finance -> ../shared/finance) is
        # changed in git at its real path; and a changed link changes every declaration under it.
        here = os.path.realpath(self.directory)
        real = os.path.relpath(os.path.realpath(os.path.join(self.directory, table.source_file)), here)
        return any(self._changed_at_or_above(path) for path in {table.source_file, real.replace(os.sep, "/")})

    def _changed_at_or_above(self, path: str) -> bool:
        assert self.changed is not None
        parts = path.split("/")
        return any("/".join(parts[:n]) in self.changed for n in range(1, len(parts) + 1))

    def _changed_files(self) -> frozenset[str]:
        if not self.ref:
            raise SelectionError("state:modified needs a git ref to compare with",
                                 hint="pass one with --state, for example --state origin/main.")
        top = self._git("rev-parse", "--show-toplevel", failure="is not inside a git repository").strip()
        self._git("rev-parse", "--verify", "--quiet", f"{self.ref}^{{commit}}",
                  failure=f'has no git commit "{self.ref}"')
        # Whole-repository paths, so a tables_dir outside the project folder is covered too.
        diff = self._git("-C", top, "diff", "--name-only", "--no-renames", "-z", self.ref)
        new = self._git("-C", top, "ls-files", "--others", "--exclude-standard", "-z")
        here = os.path.realpath(self.directory)
        return frozenset(
            os.path.relpath(os.path.join(top, name), here).replace(os.sep, "/")
            for name in (diff + new).split("\0") if name
        )

    def _git(self, *args: str, failure: str = "") -> str:
        try:
            done = subprocess.run(["git", *args], cwd=self.directory, capture_output=True, text=True,
                                  check=False)
        except OSError as error:
            raise SelectionError(f"state:modified needs git, which could not run: {error}") from error
        if done.returncode != 0:
            reason = failure or f"`git {' '.join(args)}` failed: {done.stderr.strip()}"
            raise SelectionError(f"state:modified: {self.directory} {reason}" if failure else reason,
                                 hint="run from a git checkout and pass an existing ref to --state.")
        return done.stdout
