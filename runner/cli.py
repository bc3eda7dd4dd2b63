"""argv → command → rendered output → exit code. No domain logic lives here.

Each subcommand names a module in `runner.commands` that is imported only when that subcommand runs,
so `runner validate` never imports pyspark or starts a JVM.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
import os
import shlex
import sys
import textwrap
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

from runner import __version__
from runner.arrow_allocator import choose_before_pyarrow
from runner.commands.result import CommandResult, ExitCode
from runner.errors import InternalError, Interrupted, RunnerError, StorageError
from runner.onboard import DEFAULT_MAX_DEPTH

# subcommand → (module in runner.commands, help)
COMMANDS: dict[str, tuple[str, str]] = {
    "validate": ("validate", "check the declarations against the JSON Schemas and semantic rules"),
    "ls": ("ls", "list the selected tables with their effective settings and where each came from"),
    "status": ("status", "read each selected Hudi table and summarise its timeline and files"),
    "plan": ("plan", "show, changing nothing, what apply would do to bring each table in line"),
    "apply": ("apply", "clean and resize each selected table as Spark jobs, recorded on its timeline"),
    "docs": ("docs", "write (generate) or serve a static HTML report of the selected tables"),
    "import": ("import_tables", "write a declaration for each existing Hudi table found under the given paths"),
}


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--project-dir", default=".", type=_path, help="folder holding project.yml (default: .)")
    parser.add_argument("--select", "-s", nargs="+", action="extend", default=[], metavar="SPEC",
                        help="tables to include: name, glob, tag:x, owner:x, path:glob, state:modified")
    parser.add_argument("--exclude", nargs="+", action="extend", default=[], metavar="SPEC",
                        help="tables to leave out (same grammar as --select)")
    parser.add_argument("--state", metavar="GITREF", help="git ref compared against by state:modified")
    parser.add_argument("--target", metavar="NAME", type=_name,
                        help="the target (project.yml `targets:`) whose Spark settings and threads to use")
    parser.add_argument("--format", choices=["text", "json"], default="text", help="output format")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on bad usage, but 2 means "changes pending" here: report usage errors as 1.

    Options must be spelled out: argparse would take `--auto` for `--auto-approve`, and any prefix
    of an option added later would silently change meaning. A near miss gets a did-you-mean instead.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise RunnerError(f"{self.prog}: {message}", hint=f"see `{self.prog} --help`.")

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """argparse's check of a choice (a command, --format), with the nearest choice suggested."""
        choices = action.choices
        if choices is not None and value not in choices:
            listed = ", ".join(repr(choice) for choice in choices)
            raise argparse.ArgumentError(action, f"invalid choice: {value!r} (choose from {listed})"
                                                 f"{_near(str(value), [str(c) for c in choices])}")

    def unrecognized(self, extra: Sequence[str]) -> NoReturn:
        """Arguments the command does not take, reported by the command (argparse names the top parser)."""
        if not extra[0].startswith("-"):
            self.error(f"unexpected argument {extra[0]!r}; to pick tables, write --select {extra[0]}")
        options = [o for o in self._option_string_actions if o.startswith("--")]
        self.error(f"unrecognized arguments: {' '.join(extra)}{_near(extra[0].split('=', 1)[0], options)}")


def _near(word: str, candidates: Sequence[str]) -> str:
    """` (did you mean "--verbose"?)`: an option the word begins, else the closest spelling."""
    close = [c for c in candidates if c.startswith(word)][:1] or difflib.get_close_matches(
        word, candidates, n=1, cutoff=0.75)
    return f' (did you mean "{close[0]}"?)' if close else ""


def _path(text: str) -> str:
    """A path option's value. Empty is refused, not read as the default: `--out "$PLAN"` with PLAN
    unset wrote no plan file, and `--project-dir "$DIR"` ran on the current folder's project."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the value is empty; expected a path (is a shell variable unset?)")
    return text


def _name(text: str) -> str:
    # `--target "$TARGET"` unset is a mistake in the job, not a target named "".
    if not text.strip():
        raise argparse.ArgumentTypeError("the value is empty; expected a target name from project.yml's targets:")
    return text


def _host(text: str) -> str:
    # An empty host is every interface to the socket: `--host "$HOST"` unset must not publish the report.
    if not text.strip():
        raise argparse.ArgumentTypeError("the value is empty; expected an address such as 127.0.0.1")
    return text


def _whole(text: str) -> bool:
    # str.isdigit() accepts '²', which int() refuses, and '٣', which a shell script never means;
    # int() refuses more than 4,300 digits, and no option here takes more than 5.
    return text.isascii() and text.isdigit() and len(text) <= 18


def _threads(text: str) -> int:
    if not _whole(text) or not 1 <= int(text) <= 64:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to 64, got {text!r}")
    return int(text)


DESCRIPTION = """\
Keep Apache Hudi tables the way their YAML declarations say: check the declarations, see how far
each table is from them, and clean and resize the tables, recorded on their timelines as Hudi does.
"""

# What each command's exit status means; shown by `runner --help` and `runner COMMAND --help`.
EXIT_CODES = {
    "validate": "0 the declarations are valid; 1 they are not (every problem is listed)",
    "ls": "0 listed; 1 the declarations are invalid",
    "status": "0 every table was read; 1 a table could not be read",
    "plan": "0 in sync; 2 changes pending; 3 drift only (hoodie.properties differs from the table: block); "
            "1 a table failed",
    "apply": "0 applied or already in sync; 1 a table failed (target/run_results.json says which), the plan "
             "was refused, the user declined, or Ctrl-C",
    "docs": "0 the report was written; 1 a table could not be read (its section shows why)",
    "import": "0 every table found is now declared (written, or declared already); 1 a path or table could not "
              "be imported (each is listed with why), or the project is invalid",
}

IMPORT_EPILOG = """\
Each table found gets tables/<name>.yml: its type, keys, partition and ordering fields from
hoodie.properties, the cleaning policy of its latest clean if the timeline records one, otherwise
Hudi's defaults, which say to set what the table's writers use. Nothing is overwritten: tables the
project already declares (by path) are skipped, and a taken name gets a suffix (orders_2).

examples:
  runner import warehouse/orders                 one table
  runner import /data/lake --max-depth 3         every table up to 3 folders below /data/lake
  runner import s3://bucket/warehouse --dry-run  show the files it would write, write nothing
"""

EPILOG = """\
exit status:
  0  success: valid, in sync, or applied
  1  failure: invalid declarations, a table that failed, or a usage error
  2  plan only: changes pending (run `runner apply`)
  3  plan only: no changes pending, but a table drifted from its `table:` block

examples:
  runner import /data/lake
  runner validate
  runner plan --select tag:gold --out target/plan.json
  runner apply target/plan.json
  runner docs serve

Run `runner COMMAND --help` for a command's options.
"""


NOW_HELP = ("plan as of this time: yyyyMMddHHmmss[SSS] (14 digits mean the end of that second, ...999) "
            "or ISO-8601; default: now")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="runner", description=DESCRIPTION, epilog=EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"runner {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    for name, (_, help_text) in COMMANDS.items():
        if name == "import":
            _import_parser(sub, help_text)
            continue
        cmd = sub.add_parser(name, help=help_text, description=help_text[0].upper() + help_text[1:] + ".",
                             epilog=f"exit status: {EXIT_CODES[name]}")
        _common(cmd)
        if name == "plan":
            cmd.add_argument("--out", metavar="PLAN_JSON", type=_path, help="also write the plan as JSON to this file")
            cmd.add_argument("--verbose", "-v", action="store_true",
                             help="list every file and why, instead of the first 10 of each list")
            cmd.add_argument("--now", metavar="TIME", help=NOW_HELP)
        if name == "apply":
            cmd.add_argument("plan_file", nargs="?", metavar="PLAN_JSON",
                             help="apply this saved plan (made by `runner plan --out`) and nothing else")
            cmd.add_argument("--now", metavar="TIME", help=NOW_HELP)
            cmd.add_argument("--auto-approve", action="store_true",
                             help="without PLAN_JSON: plan and apply without asking (for scheduled runs)")
            cmd.add_argument("--threads", type=_threads, metavar="N",
                             help="apply up to N tables at once in one Spark session (default: `threads:`, else 1)")
        if name == "docs":
            _docs_arguments(cmd)
    return parser


def _import_parser(sub: Any, help_text: str) -> None:
    """`import` takes paths, not tables: no --select, --exclude, --state or --target."""
    cmd = sub.add_parser("import", help=help_text, description=help_text[0].upper() + help_text[1:] + ".",
                         epilog=IMPORT_EPILOG + "\n" + textwrap.fill(f"exit status: {EXIT_CODES['import']}", 100),
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    cmd.add_argument("paths", nargs="+", metavar="PATH",
                     help="a Hudi table (a folder holding .hoodie/), or a folder or s3:// prefix to search for tables")
    cmd.add_argument("--max-depth", type=_depth, default=DEFAULT_MAX_DEPTH, metavar="N",
                     help=f"search at most N folders below each PATH (default: {DEFAULT_MAX_DEPTH}); "
                          "a table's own folders are never searched")
    cmd.add_argument("--dry-run", action="store_true", help="print the files it would write; write nothing")
    cmd.add_argument("--project-dir", default=".", type=_path, help="folder holding project.yml (default: .)")
    cmd.add_argument("--format", choices=["text", "json"], default="text", help="output format")
    cmd.add_argument("--debug", action="store_true", help="show tracebacks")
    cmd.set_defaults(target=None)


def _depth(text: str) -> int:
    if not _whole(text) or int(text) > 100:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to 100, got {text!r}")
    return int(text)


def _docs_arguments(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("action", choices=["generate", "serve"],
                     help="generate: write target/docs/index.html; serve: generate, then serve it over HTTP")
    cmd.add_argument("--out", metavar="DIR", type=_path,
                     help="write the report into DIR (default: <project>/target/docs)")
    cmd.add_argument("--now", metavar="TIME", help=NOW_HELP)
    cmd.add_argument("--host", default="127.0.0.1", type=_host, help="serve: address to listen on (default: 127.0.0.1)")
    cmd.add_argument(
        "--port", type=_port, default=8080, help="serve: port to listen on; 0 picks a free one (default: 8080)"
    )


def _port(text: str) -> int:
    # Checked here, before the report is written: the socket's own check is an OverflowError at bind.
    if not _whole(text) or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"expected a port number from 0 to 65535 (0 picks a free one), got {text!r}")
    return int(text)


def run(argv: Sequence[str]) -> CommandResult:
    """Parse argv and run the command in-process; raises RunnerError on expected failures."""
    _refuse_options_before_the_command(argv)
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        _subcommand(parser, args.command).unrecognized(extra)
    module = importlib.import_module(f"runner.commands.{COMMANDS[args.command][0]}")
    result: CommandResult = module.run(args)
    return result


def _refuse_options_before_the_command(argv: Sequence[str]) -> None:
    """`runner --project-dir proj plan`, as dbt takes some flags: argparse would read `proj` as the
    command and answer "invalid choice: 'proj'". Say where the options go, with the command fixed."""
    if not argv or not argv[0].startswith("-") or argv[0] in ("-h", "--help", "--version"):
        return
    at = next((i for i, arg in enumerate(argv) if arg in COMMANDS), None)
    if at is None:
        return
    fixed = shlex.join([argv[at], *argv[:at], *argv[at + 1:]])
    raise RunnerError(f"runner: {argv[0].split('=', 1)[0]} goes after the command: `runner {fixed}`",
                      hint=f"put every option after the command; `runner {argv[at]} --help` lists them.")


def _subcommand(parser: argparse.ArgumentParser, name: str) -> _Parser:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    sub: _Parser = actions[0].choices[name]
    return sub


def main(argv: Sequence[str] | None = None) -> int:
    choose_before_pyarrow()
    _tolerate_narrow_encodings()
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    as_json = _wants_json(argv)
    try:
        result = run(argv)
    except RunnerError as error:
        if debug:
            traceback.print_exc()
        _print_error(error, as_json)
        return int(ExitCode.FAILURE)
    except OSError as error:  # the user's file system said no (a path they gave, a full disk)
        if debug:
            traceback.print_exc()
        where = f"{error.filename}: " if error.filename else ""
        _print_error(StorageError(f"{where}{error.strerror or error}"), as_json)
        return int(ExitCode.FAILURE)
    except KeyboardInterrupt:
        if debug:
            traceback.print_exc()
        _print_error(_interrupted(argv), as_json)
        return int(ExitCode.FAILURE)
    except Exception as error:  # a bug: say so, and show the traceback only on request
        if debug:
            traceback.print_exc()
        hint = "" if debug else " (run again with --debug for the traceback)"
        _print_error(InternalError(f"{InternalError.wrapping(error).message}{hint}"), as_json)
        return int(ExitCode.FAILURE)
    try:
        if as_json:
            print(_json(result.data))
        elif result.text:
            from runner.commands.terminal import emit

            emit(result.text, pretty=result.pretty)
        sys.stdout.flush()
    except BrokenPipeError:  # `runner plan | head`: the reader has seen enough; that is no failure
        _quiet_stdout()
    return int(result.exit_code)


def _utf8(stream: Any) -> bool:
    return (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "") == "utf8"


def _tolerate_narrow_encodings() -> None:
    """On a stream that cannot encode every character (`PYTHONIOENCODING=ascii`, a Latin-1
    terminal), print a table or path name outside it as an escape rather than fail mid-output."""
    for stream in (sys.stdout, sys.stderr):
        if not _utf8(stream) and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")


def _json(data: Any) -> str:
    """JSON output: names as written (`"Café"`) on a UTF-8 stream; elsewhere JSON's own `\\u00e9`
    escapes, which every JSON reader decodes back (an escape the stream made would not parse)."""
    return json.dumps(data, indent=2, ensure_ascii=not _utf8(sys.stdout))


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that Python's flush at exit finds no closed pipe to complain of."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _interrupted(argv: Sequence[str]) -> Interrupted:
    """Ctrl-C outside the apply loop (which reports its own tables): say what it left behind."""
    command = next((arg for arg in argv if not arg.startswith("-")), "")
    if command == "import":
        return Interrupted("interrupted; each declaration import wrote is complete, the rest were not written",
                           hint="run `runner import` again: it skips the tables declared already.")
    if command != "apply":  # validate, ls, status, plan and docs only read
        return Interrupted("interrupted; nothing was changed (this command only reads)")
    return Interrupted(
        "interrupted before any table was applied; nothing was changed",
        hint="run `runner apply` again when ready.",
    )


def _wants_json(argv: Sequence[str]) -> bool:
    joined = list(argv)
    return "--format=json" in joined or any(
        a == "--format" and i + 1 < len(joined) and joined[i + 1] == "json" for i, a in enumerate(joined)
    )


def _print_error(error: RunnerError, as_json: bool) -> None:
    if as_json:
        print(_json({"error": error.to_json()}))
    else:
        from runner.commands.terminal import emit

        emit(f"error: {error}", stream=sys.stderr)
