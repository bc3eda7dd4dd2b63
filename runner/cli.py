"""argv → command → rendered output → exit code. No domain logic lives here.

Each subcommand names a module in `runner.commands` that is imported only when that subcommand runs,
so `runner validate` never imports pyspark or starts a JVM.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import traceback
from collections.abc import Sequence

from runner.commands.result import CommandResult, ExitCode
from runner.errors import RunnerError

# subcommand → (module in runner.commands, help)
COMMANDS: dict[str, tuple[str, str]] = {
    "validate": ("validate", "check the declarations against the JSON Schemas and semantic rules"),
    "ls": ("ls", "list the selected tables with their effective settings and where each came from"),
    "status": ("status", "read each selected Hudi table and summarise its timeline and files"),
    "plan": ("plan", "show, changing nothing, what apply would do to bring each table in line"),
    "apply": ("apply", "clean and resize each selected table as Spark jobs, recorded on its timeline"),
}


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--project-dir", default=".", help="folder holding project.yml (default: .)")
    parser.add_argument("--select", "-s", nargs="+", action="extend", default=[], metavar="SPEC",
                        help="tables to include: name, glob, tag:x, owner:x, path:glob, state:modified")
    parser.add_argument("--exclude", nargs="+", action="extend", default=[], metavar="SPEC",
                        help="tables to leave out (same grammar as --select)")
    parser.add_argument("--state", metavar="GITREF", help="git ref compared against by state:modified")
    parser.add_argument("--target", metavar="NAME",
                        help="the target (project.yml `targets:`) whose Spark settings and threads to use")
    parser.add_argument("--format", choices=["text", "json"], default="text", help="output format")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on bad usage, but 2 means "changes pending" here: report usage errors as 1."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise RunnerError(f"{self.prog}: {message}", hint=f"see `{self.prog} --help`.")


def _threads(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 64:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to 64, got {text!r}")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="runner", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    for name, (_, help_text) in COMMANDS.items():
        cmd = sub.add_parser(name, help=help_text, description=help_text)
        _common(cmd)
        if name == "plan":
            cmd.add_argument("--out", metavar="PLAN_JSON", help="also write the plan as JSON to this file")
            cmd.add_argument("--now", metavar="TIME", help="instant time or ISO-8601 to plan as of")
        if name == "apply":
            cmd.add_argument("plan_file", nargs="?", metavar="PLAN_JSON",
                             help="apply this saved plan (made by `runner plan --out`) and nothing else")
            cmd.add_argument("--now", metavar="TIME", help="instant time or ISO-8601 to plan as of")
            cmd.add_argument("--auto-approve", action="store_true",
                             help="without PLAN_JSON: plan and apply without asking (for scheduled runs)")
            cmd.add_argument("--threads", type=_threads, metavar="N",
                             help="apply up to N tables at once in one Spark session (default: `threads:`, else 1)")
    return parser


def run(argv: Sequence[str]) -> CommandResult:
    """Parse argv and run the command in-process; raises RunnerError on expected failures."""
    args = build_parser().parse_args(argv)
    module = importlib.import_module(f"runner.commands.{COMMANDS[args.command][0]}")
    result: CommandResult = module.run(args)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    as_json = _wants_json(argv)
    try:
        result = run(argv)
    except RunnerError as error:
        if debug:
            traceback.print_exc()
        _print_error(error.kind, str(error), as_json)
        return int(ExitCode.FAILURE)
    except KeyboardInterrupt:
        _print_error("Interrupted", "interrupted; the next run resumes where this one stopped", as_json)
        return int(ExitCode.FAILURE)
    except Exception as error:  # a bug: say so, and show the traceback only on request
        if debug:
            traceback.print_exc()
        hint = "" if debug else " (run again with --debug for the traceback)"
        _print_error("InternalError", f"internal error: {type(error).__name__}: {error}{hint}", as_json)
        return int(ExitCode.FAILURE)
    if as_json:
        print(json.dumps(result.data, indent=2, sort_keys=False))
    elif result.text:
        print(result.text)
    return int(result.exit_code)


def _wants_json(argv: Sequence[str]) -> bool:
    joined = list(argv)
    return "--format=json" in joined or any(
        a == "--format" and i + 1 < len(joined) and joined[i + 1] == "json" for i, a in enumerate(joined)
    )


def _print_error(kind: str, message: str, as_json: bool) -> None:
    if as_json:
        print(json.dumps({"error": {"type": kind, "message": message}}, indent=2))
    else:
        print(f"error: {message}", file=sys.stderr)
