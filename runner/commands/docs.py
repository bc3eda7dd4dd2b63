"""`runner docs generate|serve`: a static HTML report of the selected tables, like dbt docs.

`generate` writes `<project>/target/docs/index.html` (or `--out DIR`): read-only on every table,
no Spark. `serve` generates, then serves that folder on http://127.0.0.1:PORT until Ctrl-C.
"""

from __future__ import annotations

import argparse
import errno
import socket
import sys
from datetime import UTC, datetime
from pathlib import Path

from runner.commands._common import parse_now, selected
from runner.commands.ls import table_json
from runner.commands.result import CommandResult, ExitCode
from runner.docs.collect import collect_site
from runner.docs.page import INDEX, write_site
from runner.errors import StorageError
from runner.output_paths import refuse_blocked_output
from runner.service.locations import guarded_location, instant_text

DEFAULT_OUT = Path("target") / "docs"


def run(args: argparse.Namespace) -> CommandResult:
    project, tables = selected(args)
    now = parse_now(args.now)
    out_dir = Path(args.out).resolve() if args.out else Path(project.directory) / DEFAULT_OUT
    refuse_blocked_output(out_dir / INDEX, what="the report", fix="pass another folder with --out.")
    if args.action == "serve":
        _refuse_unknown_host(args.host)
    data = collect_site(
        project, tables, now=now, now_text=instant_text(now),
        generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
        declaration_json=table_json, locate=lambda decl: guarded_location(project, decl),
    )
    try:
        index = write_site(data, out_dir)
    except OSError as error:
        raise StorageError(f"cannot write the report to {out_dir}: {error.strerror or error}",
                           hint="pass a writable folder with --out.") from None
    failed = [t["name"] for t in data["tables"] if "error" in t]
    summary = {"index": str(index), "tables": [t["name"] for t in data["tables"]], "failed": failed}
    text = _text(index, len(data["tables"]), failed)
    if args.action == "serve":
        _serve(index.parent, args.host, args.port)
    return CommandResult(ExitCode.FAILURE if failed else ExitCode.OK, text, summary)


def _text(index: Path, count: int, failed: list[str]) -> str:
    lines = [f"wrote {index} ({count} table{'' if count == 1 else 's'})"]
    lines += [f"! {name}: could not be read; its section shows the error" for name in failed]
    return "\n".join(lines)


def _refuse_unknown_host(host: str) -> None:
    """Before the report is written: a host the machine cannot listen on, named as the host (the
    bind's own error came with a hint to change the port)."""
    try:
        socket.getaddrinfo(host, None)
    except (socket.gaierror, UnicodeError) as error:
        reason = error.strerror if isinstance(error, socket.gaierror) else str(error)
        raise StorageError(f"--host {host}: not an address or name this machine can listen on ({reason})",
                           hint="pass --host 127.0.0.1 (this machine only), 0.0.0.0 (every interface) or one of "
                                "this machine's addresses or names.") from None


def _serve(directory: Path, host: str, port: int) -> None:
    from runner.docs.serve import make_server

    try:
        server = make_server(directory, host=host, port=port)
    except OSError as error:
        # Only a port in use is the port's fault; an address of another machine is the host's.
        fix = "choose another port with --port (0 picks a free one)." if error.errno == errno.EADDRINUSE else \
            "pass --host 127.0.0.1, 0.0.0.0, or an address of this machine."
        raise StorageError(f"cannot listen on {host}:{port}: {error.strerror or error}", hint=fix) from None
    bound_port = server.server_address[1]  # the real port when --port 0 let the OS choose
    print(f"serving {directory} at http://{host}:{bound_port}/ (Ctrl-C to stop)", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass  # Ctrl-C is how a user stops serving, not a failure
    finally:
        server.server_close()
