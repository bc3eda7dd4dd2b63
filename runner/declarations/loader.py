"""project.yml + tables/**/*.yml → one validated `Project`, or every problem at once.

The pipeline per file is: read → YAML (`yaml_io`) → JSON Schema (`schema`) → merge with defaults
(`merge`) → single-table rules; then rules across files (`rules`). A problem in one file never
stops the others from being checked: the user sees the whole list in one run and can fix it in
one pass. File names in problems are relative to the project directory.
"""

from __future__ import annotations

import codecs
import errno
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from runner.declarations import rules, schema, targets
from runner.declarations.merge import SIZE_FIELDS, Setting, build_table, effective_settings, lookup
from runner.declarations.model import Project, Source, SparkSettings, TableDeclaration
from runner.declarations.paths import PathError, RealLocations, resolve_path
from runner.declarations.schema import show
from runner.declarations.text import text_problems
from runner.declarations.yaml_io import Loaded, load_yaml
from runner.errors import DeclarationError, Problem

PROJECT_FILE = "project.yml"
DEFAULT_TABLES_DIR = "tables"
_EXTENSIONS = (".yml", ".yaml")


@dataclass(frozen=True, slots=True)
class _ProjectFile:
    doc: Loaded
    defaults: Loaded | None  # project.yml without what the schema rejected; None if not a mapping
    tables_dir: str
    roots: tuple[str, ...]
    found: bool = True  # False: project.yml or its tables_dir is unusable, already reported
    inherited: Mapping[str, Setting] | None = None  # effective_settings(None, defaults), shared by every table


def load_project(project_dir: str | os.PathLike[str], *, target: str | None = None,
                 env: Mapping[str, str] | None = None, new_files: Mapping[str, str] | None = None) -> Project:
    """Load, validate and merge a whole project.

    Args:
        project_dir: the folder holding project.yml.
        target: the target to use (`--target`); default: project.yml's `target:`, if any.
        env: where `${env:NAME}` references are resolved (default: `os.environ`).
        new_files: table files not written yet (path relative to the project directory → text),
            checked as if they were on disk beside the others: `runner import` proves a declaration
            valid, names and locations against the rest included, before it writes the file. When
            given (even empty), a tables_dir that does not exist yet is no problem: import creates it.

    Returns:
        The project with every table's effective settings, its path resolved (an absolute local
        path, or a URI without trailing slash), its provenance filled, and `tables` sorted by name.

    Raises:
        DeclarationError: with every problem found in project.yml and in every table file, sorted
            by file and line. Bad input never raises anything else.
    """
    root = os.path.abspath(os.fspath(project_dir))
    project, problems = _load_project_file(root)
    run = targets.RunSettings(None, SparkSettings(), targets.DEFAULT_THREADS, ())
    if project.defaults is not None:
        run, found = targets.choose(project.defaults, target, os.environ if env is None else env)
        problems += found
    located: list[rules.Located] = []
    tables: list[TableDeclaration] = []
    real_of = RealLocations()
    for relative in _table_files(root, project, problems, new_files):
        text = None if new_files is None else new_files.get(relative)
        table, entry, found = _load_table(root, relative, project, real_of, text)
        located.append(entry)
        problems += found
        if table is not None:
            tables.append(table)
    problems += rules.duplicate_problems(located)
    for entry in located:
        problems += rules.root_problems(entry, project.roots, real_of)
    if problems:
        raise DeclarationError(_sorted(problems))
    return _project(root, project, tables, run)


def _project(root: str, project: _ProjectFile, tables: list[TableDeclaration], run: targets.RunSettings) -> Project:
    data = project.doc.data
    assert isinstance(data, Mapping)
    return Project(
        name=str(data["name"]),
        directory=root,
        tables_dir=project.tables_dir,
        allowed_roots=project.roots,
        spark=run.spark,
        tables=tuple(sorted(tables, key=lambda table: table.name)),
        target=run.target,
        threads=run.threads,
        run_provenance=tuple((e.name, e.shown, e.origin) for e in run.provenance),
    )


def _why(root: str, relative: str, error: OSError) -> str:
    """The system's reason, or for a symbolic link to nothing ("No such file or directory" of a
    file that is listed right there) where it points."""
    path = os.path.join(root, relative)
    if os.path.islink(path) and not os.path.exists(path):
        return f"it is a symbolic link to {os.readlink(path)}, which does not exist"
    return str(error.strerror)


def read_yaml(root: str, relative: str) -> Loaded:
    """Read and parse one file of the project; unreadable, odd or non-UTF-8 files become problems."""
    path = os.path.join(root, relative)
    try:
        # O_NONBLOCK: opening a named pipe for reading would otherwise wait for a writer.
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
            info = os.fstat(handle.fileno())
            odd = _odd_file(path, info, "project.yml" if relative == PROJECT_FILE else "a declaration")
            if odd is not None:
                return Loaded(relative, None, {}, (Problem(relative, 0, 0, "", f"not read: {odd}"),))
            raw = handle.read()
    except OSError as error:
        why = f"cannot read the file: {_why(root, relative, error)}"
        return Loaded(relative, None, {}, (Problem(relative, 0, 0, "", why),))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        other = _other_encoding(raw)
        if other is not None:
            message = (f"not UTF-8 text: it is {other} (it starts with a {other} byte order mark), as Windows "
                       "PowerShell 5 writes with `>` and Out-File; save it as UTF-8")
            return Loaded(relative, None, {}, (Problem(relative, 0, 0, "", message),))
        line = raw.count(b"\n", 0, error.start) + 1
        column = error.start - raw.rfind(b"\n", 0, error.start)
        message = f"not UTF-8 text (byte 0x{raw[error.start]:02x}); save the file as UTF-8"
        return Loaded(relative, None, {}, (Problem(relative, line, column, "", message),))
    return load_yaml(text, relative)


_MAX_BYTES = 16 * 1024 * 1024  # a declaration is a few hundred bytes; the YAML node limit is reached far sooner
_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _odd_file(path: str, info: os.stat_result, what: str) -> str | None:
    """Why a file is no declaration to read (a pipe waits, a device may never end, a huge file is
    no declaration), or None for a plain file of a declaration's size."""
    if stat.S_ISREG(info.st_mode):
        if info.st_size <= _MAX_BYTES:
            return None
        return (f"it is {info.st_size / 1024 / 1024:.1f} MiB, and a declaration is at most "
                f"{_MAX_BYTES // 1024 // 1024} MiB; is this the right file?")
    kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a plain file")
    link = f"a symbolic link to {os.readlink(path)}, " if os.path.islink(path) else ""
    return f"it is {link}{kind}, not a file; {what} is a plain file"


def _other_encoding(raw: bytes) -> str | None:
    """UTF-16 or UTF-32, told by the byte order mark a Windows editor or shell put first."""
    for bom, name in ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
                      (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16")):
        if raw.startswith(bom):
            return name
    return None


def _no_project_file(root: str) -> str:
    """Why there is no project.yml to read, with the fix: the folder itself may be the mistake."""
    fix = "To fix this, pass the project's folder (the one holding project.yml) with --project-dir"
    if os.path.isfile(root):
        return f"not found: the project folder {root} is a file. {fix}"
    if not os.path.isdir(root):
        return f"not found: the project folder {root} does not exist. {fix}"
    if os.path.isdir(os.path.join(root, PROJECT_FILE)):  # "not found" beside the name the user can see
        return (f"is a folder, expected a file in {root}; every project needs a project.yml with at least `name:`. "
                "To fix this, replace the folder with the file, or pass the right folder with --project-dir")
    return (f"not found in {root}; every project needs a project.yml with at least `name:`. "
            "To fix this, create it, or pass the right folder with --project-dir")


def _load_project_file(root: str) -> tuple[_ProjectFile, list[Problem]]:
    """Read and check project.yml; the defaults the schema accepted are merged into the tables."""
    path = os.path.join(root, PROJECT_FILE)
    # A pipe, a device or a link to nothing is there to see: `read_yaml` names what it is.
    if not os.path.lexists(path) or os.path.isdir(path):
        message = _no_project_file(root)
        doc = Loaded(PROJECT_FILE, None, {})
        project = _ProjectFile(doc, None, DEFAULT_TABLES_DIR, (), found=False)
        return project, [Problem(PROJECT_FILE, 0, 0, "", message)]
    doc = read_yaml(root, PROJECT_FILE)
    if doc.data is None and doc.problems and not doc.problems[0].line:  # not read at all
        return _ProjectFile(doc, None, DEFAULT_TABLES_DIR, (), found=False), list(doc.problems)
    problems = list(doc.problems) + _top_level(doc, "a project (at least `name:`)")
    tables_dir = lookup(doc.data, ("tables_dir",))
    if not isinstance(tables_dir, str) or not tables_dir.strip():
        tables_dir = DEFAULT_TABLES_DIR
    if not isinstance(doc.data, Mapping):
        return _ProjectFile(doc, None, tables_dir, ()), problems
    shape, defaults = schema.check_and_prune(doc, schema.PROJECT_SCHEMA)
    problems += shape + text_problems(defaults)
    roots = _roots(defaults, root, problems)
    # The defaults the schema accepted are checked and merged even when others were rejected,
    # so one bad line in project.yml neither hides nor fakes problems in the tables.
    project_settings = effective_settings(None, defaults)
    problems += rules.sizing_problems(project_settings, Source.PROJECT_DEFAULT)
    problems += rules.spark_problems(project_settings, Source.PROJECT_DEFAULT)
    if lookup(defaults.data, ("tables_dir",)) != tables_dir and tables_dir != DEFAULT_TABLES_DIR:
        # The schema refused tables_dir and said why; look in the default folder, quietly.
        return _ProjectFile(doc, defaults, DEFAULT_TABLES_DIR, roots, False, project_settings), problems
    return _ProjectFile(doc, defaults, tables_dir, roots, True, project_settings), problems


def _roots(doc: Loaded, root: str, problems: list[Problem]) -> tuple[str, ...]:
    roots = []
    declared = lookup(doc.data, ("allowed_roots",))
    for index, text in enumerate(declared if isinstance(declared, list) else ()):
        if isinstance(text, str):
            try:
                roots.append(resolve_path(text, root))
            except PathError as error:
                problems.append(doc.problem(("allowed_roots", index), str(error)))
    return tuple(roots)


def _top_level(doc: Loaded, what: str) -> list[Problem]:
    if isinstance(doc.data, Mapping) or (doc.data is None and doc.problems):
        return []
    if doc.data is None:
        return [Problem(doc.file, 0, 0, "", f"the file is empty; expected {what}")]
    return [doc.problem((), f"expected a mapping (key: value lines) at the top of the file, "
                        f"got {show(doc.data)}; the file should declare {what}")]


def _table_files(root: str, project: _ProjectFile, problems: list[Problem],
                 new_files: Mapping[str, str] | None) -> Iterator[str]:
    """Every *.yml/*.yaml under tables_dir (hidden files and folders skipped), and the new files, sorted."""
    folder = os.path.normpath(os.path.join(root, project.tables_dir))
    if not os.path.isdir(folder):
        if os.path.exists(folder) and project.found:  # import cannot create the folder either
            problems.append(project.doc.problem(("tables_dir",), f'"{project.tables_dir}" is a file in {root}, but '
                                                "tables_dir names the folder holding the table declarations; "
                                                "point tables_dir at that folder"))
            return iter(())
        if os.path.islink(folder) and project.found:  # `ls` shows it there: "not found" would mislead
            loop = _stat_errno(folder) == errno.ELOOP
            problems.append(project.doc.problem(("tables_dir",), (
                f'folder "{project.tables_dir}" in {root} is a symbolic link to {os.readlink(folder)}, '
                f"{'which leads back to itself' if loop else 'which does not exist'}; point the link at the "
                "folder holding the table declarations, or set tables_dir in project.yml")))
            return iter(())
        if new_files is not None:  # the first import into a project creates the folder
            return iter(sorted(new_files))
        if not project.found:  # one problem is enough: the missing project.yml explains this one
            return iter(())
        problems.append(project.doc.problem(("tables_dir",), f'folder "{project.tables_dir}" not found in '
                                            f"{root}; create it, or set tables_dir in project.yml"))
        return iter(())
    found = []
    def unreadable(error: OSError) -> None:
        where = os.path.relpath(error.filename or folder, root)
        problems.append(Problem(where, 0, 0, "", f"cannot read the folder: {error.strerror}"))

    top, visited = os.path.realpath(folder), {os.path.realpath(folder)}
    for current, folders, files in os.walk(folder, onerror=unreadable, followlinks=True):
        folders[:] = [name for name in sorted(folders) if not name.startswith(".")
                      and _walk_into(os.path.join(current, name), top, visited)]
        found += [os.path.join(current, name) for name in files
                  if name.endswith(_EXTENSIONS) and not name.startswith(".")]
        problems.extend(_unread_declaration(os.path.relpath(os.path.join(current, name), root).replace(os.sep, "/"))
                        for name in files if _looks_like_a_declaration(name))
    project_file = os.path.join(root, PROJECT_FILE)
    relative = {os.path.relpath(path, root).replace(os.sep, "/") for path in found if path != project_file}
    return iter(sorted(relative | set(new_files or ())))


def _stat_errno(path: str) -> int | None:
    try:
        os.stat(path)
    except OSError as error:
        return error.errno
    return None


def _walk_into(path: str, top: str, visited: set[str]) -> bool:
    """Whether to read the folder `path` below tables_dir (real path `top`): linked folders too, as
    tables_dir itself may be a link, but each real folder once. A link to a folder inside the tree
    is left to that folder (its files keep their real names); a link back up (a cycle) ends there."""
    real = os.path.realpath(path)
    if real in visited or (os.path.islink(path) and (real == top or real.startswith(top + os.sep))):
        return False
    visited.add(real)
    return True


def _looks_like_a_declaration(name: str) -> bool:
    """`orders.YML`: a declaration's name in another case, which would be skipped without a word
    (a table then never planned or cleaned, and the project said to be valid)."""
    return name.lower().endswith(_EXTENSIONS) and not name.endswith(_EXTENSIONS) and not name.startswith(".")


def _unread_declaration(relative: str) -> Problem:
    extension = relative.rsplit(".", 1)[1]
    return Problem(relative, 0, 0, "", f"not read: declarations end in .yml or .yaml, in lower case, and this one ends "
                                       f"in .{extension}; rename it (or move it out of the tables folder)")


def _load_table(
    root: str, relative: str, project: _ProjectFile, real_of: RealLocations, text: str | None = None
) -> tuple[TableDeclaration | None, rules.Located, list[Problem]]:
    doc = read_yaml(root, relative) if text is None else load_yaml(text, relative)
    problems = list(doc.problems)
    problems += _top_level(doc, "a table (at least `name:` and `path:`)")
    if not isinstance(doc.data, Mapping):
        return None, rules.Located(doc, None, None), problems
    shape, checked = schema.check_and_prune(doc, schema.TABLE_SCHEMA)
    location, path_problems = _location(checked, root)
    problems += shape + path_problems + text_problems(checked)
    name = _valid_name(doc, shape)
    entry = rules.Located(doc, name, location, None if location is None else real_of(location))
    # The rules run on what the schema accepted, so a schema error never hides a broken rule.
    settings = effective_settings(checked, project.defaults, project.inherited)
    # With project.yml unreadable, what a table inherits is unknown: judge only its own choices.
    known = project.defaults is not None
    if known or settings["clean.policy"].source is Source.TABLE:
        problems += rules.policy_problems(checked, settings)
    if known or all(settings[f"file_sizing.{key}"].source is Source.TABLE for key in SIZE_FIELDS):
        problems += rules.sizing_problems(settings, Source.TABLE)
    problems += rules.spark_problems(settings, Source.TABLE)
    if shape or doc.refused or location is None:
        return None, entry, problems
    return build_table(doc, settings, location, project.defaults), entry, problems


def _location(doc: Loaded, root: str) -> tuple[str | None, list[Problem]]:
    declared = lookup(doc.data, ("path",))
    if not isinstance(declared, str) or not declared:
        return None, []
    try:
        return resolve_path(declared, root), []
    except PathError as error:
        return None, [doc.problem(("path",), str(error))]


def _valid_name(doc: Loaded, shape: list[Problem]) -> str | None:
    name = lookup(doc.data, ("name",))
    if not isinstance(name, str) or any(problem.field == "name" for problem in shape):
        return None
    return name


def _sorted(problems: list[Problem]) -> list[Problem]:
    unique = dict.fromkeys(problems)
    return sorted(unique, key=lambda p: (p.file != PROJECT_FILE, p.file, p.line, p.column, p.field, p.message))
