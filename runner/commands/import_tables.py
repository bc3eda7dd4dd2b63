"""`runner import PATH...`: write a declaration for every Hudi table found that the project lacks.

Nothing is ever overwritten: a table the project already declares (its path compared as the loader
compares them, links followed) is reported and left alone, a name or file name already taken gets a
numbered suffix, and each file is created only if its name is still free. Every new file is checked
with the project's own loader, beside the declarations already there, before anything is written, so
`runner validate` accepts what import writes. Like `validate`, this starts no Spark.
"""

from __future__ import annotations

import argparse
import os
import shlex
import uuid
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from runner.commands._common import load, outside_project
from runner.commands.result import CommandResult, ExitCode
from runner.declarations.model import Project
from runner.declarations.paths import PathError, is_local, is_under, location_key, real_location, resolve_path
from runner.errors import DeclarationError, RunnerError, StorageError
from runner.onboard.declaration import Draft, Names, base_name, draft
from runner.onboard.discover import Search, read_facts, search

_EXTENSIONS = (".yml", ".yaml")


class Outcome(StrEnum):
    WRITTEN = "written"
    WOULD_WRITE = "would_write"  # --dry-run
    DECLARED = "already_declared"
    FAILED = "failed"


_MARK = {Outcome.WRITTEN: "+", Outcome.WOULD_WRITE: "+", Outcome.DECLARED: "=", Outcome.FAILED: "!"}


@dataclass(slots=True)
class Row:
    """One table found (or one path that failed), and what import did about it."""

    location: str
    outcome: Outcome
    name: str | None = None
    file: str | None = None  # relative to the project: the file written, or the declaration already there
    error: RunnerError | None = None
    notes: list[str] = field(default_factory=list)
    text: str | None = None  # the declaration written (or, with --dry-run, that would be)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"path": self.location, "status": self.outcome.value, "name": self.name,
                                "file": self.file, "notes": self.notes}
        if self.error is not None:
            data["error"] = self.error.to_json()
        if self.text is not None and self.outcome in (Outcome.WRITTEN, Outcome.WOULD_WRITE):
            data["declaration"] = self.text
        return data


def run(args: argparse.Namespace) -> CommandResult:
    project = load(args, new_files={})  # a project without its tables folder yet is fine: import creates it
    not_searched: list[tuple[str, str]] = []
    rows = _found(project, args.paths, args.max_depth, not_searched)
    drafts = _drafted(project, rows)
    _check(project, args, rows, drafts)
    for row in rows:
        if row.outcome is Outcome.WOULD_WRITE and not args.dry_run:
            try:
                _write(project, row)
            except OSError as error:  # one file the disk refused; the others are still written
                row.outcome, row.file = Outcome.FAILED, None
                where = f"{error.filename}: " if error.filename else ""
                row.error = StorageError(f"{row.location}: cannot write its declaration: {where}"
                                         f"{error.strerror or error}")
    return _result(project, args, rows, not_searched)


# More folders than this that cannot be listed are one line: `runner import /` met thousands.
_UNREADABLE_NAMED = 3


def _found(project: Project, paths: list[str], max_depth: int, not_searched: list[tuple[str, str]]) -> list[Row]:
    """Every table below `paths`, each once; tables the project declares are marked as such."""
    declared = {location_key(real_location(t.path)): t for t in project.tables}
    rows: list[Row] = []
    seen: set[str] = set()
    for given in paths:
        try:
            location = resolve_path(given, os.getcwd())
            found = search(given, location, max_depth=max_depth)
        except PathError as error:
            rows.append(Row(given, Outcome.FAILED, error=StorageError(f"{given}: {error}")))
            continue
        except RunnerError as error:
            rows.append(Row(given, Outcome.FAILED, error=error))
            continue
        rows += _unreadable_rows(found)
        not_searched += found.not_searched
        if not found.tables and not found.unreadable:
            deeper = (f"; {found.too_deep:,} folders deeper than --max-depth {max_depth} were not searched"
                      if found.too_deep else "")
            rows.append(Row(given, Outcome.FAILED, error=StorageError(
                f"{given}: no Hudi table (a folder holding .hoodie/hoodie.properties) found in {location}, "
                f"{_count(found.folders, 'folder')} searched{deeper}",
                hint="give a deeper --max-depth, or check the path." if found.too_deep else "check the path.")))
        for table in found.tables:
            key = location_key(real_location(table))
            if key in seen:
                continue
            seen.add(key)
            known = declared.get(key)
            if known is not None:
                rows.append(Row(table, Outcome.DECLARED, name=known.name, file=known.source_file))
            else:
                rows.append(Row(table, Outcome.WOULD_WRITE))
    return rows


def _unreadable_rows(found: Search) -> list[Row]:
    """A row per folder that could not be listed, or one for them all when there are many."""
    if len(found.unreadable) <= _UNREADABLE_NAMED:
        return [Row(found.given, Outcome.FAILED, error=error) for error in found.unreadable]
    reasons = Counter(error.message.rstrip(".").rpartition(": ")[2] for error in found.unreadable)
    why = ", ".join(f"{count:,}: {reason}" for reason, count in reasons.most_common())
    examples = ", ".join(found.unreadable_folders[:_UNREADABLE_NAMED])
    return [Row(found.given, Outcome.FAILED, error=StorageError(
        f"{found.given}: {len(found.unreadable):,} folders could not be listed and were not searched ({why}), "
        f"such as {examples}", hint="give the folders that hold your tables rather than one above them."))]


def _drafted(project: Project, rows: list[Row]) -> dict[str, Row]:
    """Read each new table and draft its declaration; names unique across the project and this run."""
    folder = os.path.normpath(os.path.join(project.directory, project.tables_dir))
    names = Names([t.name for t in project.tables] + sorted(_file_stems(folder)))
    schema_ref = os.path.relpath(os.path.join(project.directory, "schemas", "table.schema.json"), folder)
    drafts: dict[str, Row] = {}
    for row in rows:
        if row.outcome is not Outcome.WOULD_WRITE:
            continue
        try:
            facts = read_facts(row.location)
        except RunnerError as error:
            row.outcome, row.error = Outcome.FAILED, error
            continue
        row.name = names.choose(base_name(facts.config.name, folder=row.location))
        made: Draft = draft(facts, name=row.name, path=_path_text(project, row.location),
                            schema_ref=schema_ref.replace(os.sep, "/"))
        row.text, row.notes = made.text, list(made.notes)
        row.file = os.path.relpath(os.path.join(folder, f"{row.name}.yml"), project.directory).replace(os.sep, "/")
        drafts[row.file] = row
    return drafts


def _file_stems(folder: str) -> set[str]:
    """Declaration file names already in the folder: a new file never takes one of them."""
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):  # nothing taken; writing there says what is wrong
        return set()
    return {os.path.splitext(name)[0] for name in names if name.endswith(_EXTENSIONS)}


def _path_text(project: Project, location: str) -> str:
    """The `path:` to write: relative to the project when the table lies inside it, as the examples are."""
    if is_local(location) and is_under(location, project.directory) and location != project.directory:
        return os.path.relpath(location, project.directory).replace(os.sep, "/")
    return location


def _check(project: Project, args: argparse.Namespace, rows: list[Row], drafts: dict[str, Row]) -> None:
    """Load the project with the new files as if written: a file with a problem is not written.

    A problem of one new file can be caused by another (two new tables nested in each other): both
    are reported, and the check runs again on what is left until the rest loads cleanly.
    """
    # Problems name files as `load` shows them: absolute when --project-dir is another folder.
    shown = {(os.path.join(project.directory, file) if outside_project(args) else file): file for file in drafts}
    pending = dict(drafts)
    while pending:
        try:
            load(args, new_files={file: row.text or "" for file, row in pending.items()})
            return
        except DeclarationError as error:
            bad = {shown[p.file] for p in error.problems if shown.get(p.file) in pending}
            if not bad:  # the project itself went bad meanwhile: report it as `validate` would
                raise
            for file in bad:
                row = pending.pop(file)
                row.outcome = Outcome.FAILED
                row.error = DeclarationError([p for p in error.problems if shown.get(p.file) == file])
                row.file = None


def _write(project: Project, row: Row) -> None:
    """Create the file only if its name is still free: complete, or not there at all.

    The text goes to a hidden temporary file beside it, then is linked to its name: a link, unlike a
    rename, fails when the name was taken meanwhile, so a file someone just wrote is never replaced.
    """
    assert row.file is not None and row.text is not None
    final = os.path.join(project.directory, row.file)
    os.makedirs(os.path.dirname(final), exist_ok=True)
    temporary = os.path.join(os.path.dirname(final), f".{os.path.basename(final)}.{uuid.uuid4().hex}.tmp")
    try:
        with open(temporary, "x", encoding="utf-8") as handle:
            handle.write(row.text)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temporary, final)
        except FileExistsError:
            row.outcome = Outcome.FAILED
            row.error = StorageError(f"{final} was created by someone else while import ran; left as it is",
                                     hint="run `runner import` again: it skips tables declared meanwhile.")
            return
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    row.outcome = Outcome.WRITTEN


def _result(project: Project, args: argparse.Namespace, rows: list[Row],
            not_searched: list[tuple[str, str]]) -> CommandResult:
    counts = {outcome: sum(r.outcome is outcome for r in rows) for outcome in Outcome}
    shown = (lambda file: os.path.join(project.directory, file)) if outside_project(args) else (lambda f: f)
    lines = [f"runner import: project {project.name}" + (" (dry run: nothing is written)" if args.dry_run else "")]
    for row in rows:
        lines += _row_lines(row, shown, args.dry_run)
    summary = _summary(counts, args.dry_run)
    if not_searched:
        lines += ["Not searched: " + ", ".join(f"{path} ({point}, a kernel file system: no table is kept there)"
                                              for path, point in not_searched)]
    lines += ["", summary, _next(counts, args)]
    # Each table's "file" is relative to the project folder, which is named here so that a caller
    # running from elsewhere (`--project-dir`) can resolve it without knowing where it ran.
    data = {"project": project.name, "project_directory": os.path.abspath(project.directory),
            "dry_run": args.dry_run,
            "tables": [r.to_json() for r in rows],
            "not_searched": [{"path": path, "file_system": point} for path, point in not_searched],
            "summary": {o.value: n for o, n in counts.items()}}
    failed = counts[Outcome.FAILED] > 0
    return CommandResult(ExitCode.FAILURE if failed else ExitCode.OK, "\n".join(lines), data)


def _row_lines(row: Row, shown: Any, dry_run: bool) -> list[str]:
    mark = _MARK[row.outcome]
    if row.outcome is Outcome.FAILED:
        assert row.error is not None
        first, *rest = str(row.error).splitlines()
        named = first if row.location in first else f"{row.location}: {first}"
        return [f"{mark} {named}", *(f"    {line.strip()}" for line in rest)]
    if row.outcome is Outcome.DECLARED:
        return [f"{mark} {row.name} ({row.location}): already declared in {shown(row.file)}; left as it is"]
    verb = "would write" if dry_run else "wrote"
    lines = [f"{mark} {row.name} ({row.location}): {verb} {shown(row.file)}"]
    lines += [f"    {note}" for note in row.notes]
    if dry_run and row.text:
        lines += [f"    | {line}".rstrip() for line in row.text.splitlines()]
    return lines


def _summary(counts: dict[Outcome, int], dry_run: bool) -> str:
    written = counts[Outcome.WOULD_WRITE] if dry_run else counts[Outcome.WRITTEN]
    first = f"{written:,} to write" if dry_run else f"{written:,} written"
    return (f"Import: {first}, {counts[Outcome.DECLARED]:,} already declared, {counts[Outcome.FAILED]:,} failed"
            + ("; nothing was written (--dry-run)." if dry_run else "."))


def _next(counts: dict[Outcome, int], args: argparse.Namespace) -> str:
    where = f" --project-dir {shlex.quote(args.project_dir)}" if outside_project(args) else ""
    check = f"`runner validate{where}`, then see what apply would do with `runner plan{where}`"
    if counts[Outcome.FAILED]:
        return (f"Next: fix what is marked ! and run `runner import` again (tables already declared are skipped); "
                f"then check with {check}.")
    if args.dry_run and counts[Outcome.WOULD_WRITE]:
        return f"Next: run the same command without --dry-run to write the files; then check with {check}."
    if counts[Outcome.WRITTEN]:
        return (f"Next: set each new table's retention and file sizes to what its writers use, check with {check}.")
    return f"Next: nothing to import: every table found is declared. See what apply would do with `runner plan{where}`."


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"
