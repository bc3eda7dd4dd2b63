"""`runner status`: read each selected table and summarise its timeline and files."""

from __future__ import annotations

import argparse
from typing import Any

from runner.commands._common import human_bytes, selected
from runner.commands.render import count
from runner.commands.result import CommandResult, ExitCode
from runner.errors import RunnerError
from runner.hudi.mdt.check import check_metadata_table
from runner.hudi.state import read_table_state
from runner.shortlist import shortlist
from runner.storage import storage_for
from runner.summary import summarize


def run(args: argparse.Namespace) -> CommandResult:
    _, tables = selected(args)
    rows: list[dict[str, Any]] = []
    for decl in tables:
        try:
            storage = storage_for(decl.path)
            state = read_table_state(storage)
            row = summarize(decl, state)
            if state.metadata.has_metadata_table:
                # Whether the MDT agrees with storage: no Hudi tool reports this drift.
                row["metadata_table_check"] = check_metadata_table(storage, state).to_json()
            rows.append(row)
        except RunnerError as error:
            rows.append({"name": decl.name, "path": decl.path, "error": error.to_json(),
                         "declared_in": decl.source_file})
    failed = any("error" in r for r in rows)
    return CommandResult(ExitCode.FAILURE if failed else ExitCode.OK, _text(rows), {"tables": rows},
                         pretty=(lambda: _table(rows)) if rows else None)


_SHORT_TYPE = {"COPY_ON_WRITE": "COW", "MERGE_ON_READ": "MOR"}


def _table(rows: list[dict[str, Any]]) -> Any:
    """The terminal's summary of every table, one row each (the text above has the details)."""
    from runner.commands.terminal import summary_table

    columns = ["table", "type", "version", "partitions", "file groups", "latest", "older",
               "small files", "pending", "drift"]
    body, styles = [], []
    for r in rows:
        if "error" in r:
            body.append([r["name"], "cannot be read", *[""] * 8])
            styles.append("red")
            continue
        body.append(
            [
                r["name"],
                _SHORT_TYPE.get(r["table_type"], r["table_type"]),
                str(r["table_version"]),
                f"{r['partitions']:,}",
                f"{r['file_groups']:,}",
                human_bytes(r["latest_slices"]["bytes"]),
                human_bytes(r["older_slices"]["bytes"]),
                f"{r['small_files']['count']:,}",
                str(len(r["pending_instants"])),
                str(len(r["declaration_drift"])),
            ]
        )
        styles.append("magenta" if r["declaration_drift"] else "")
    return summary_table("Tables", columns, body, styles=styles)


def _text(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no tables selected"
    out: list[str] = []
    for r in rows:
        if "error" in r:
            out += [f"! {r['name']} ({r['path']})", *(f"    {x}" for x in r["error"]["message"].splitlines()),
                    f"    declared in {r['declared_in']}", ""]
            continue
        out.append(
            f"{r['name']} ({r['path']}): {r['table_type']}, table version {r['table_version']}"
            + (", metadata table present" if r["metadata_table"] else "")
        )
        out.append("    instants: " + (", ".join(f"{k} x{v}" for k, v in r["instants"].items()) or "none"))
        if r["pending_instants"]:
            out.append("    pending: " + ", ".join(r["pending_instants"]))
        out.append(
            f"    {count(r['partitions'], 'partition')}, {count(r['file_groups'], 'file group')}, "
            f"{r['replaced_file_groups']:,} replaced"
        )
        for label in ("latest_slices", "older_slices", "replaced_slices"):
            f = r[label]
            out.append(
                f"    {label.replace('_', ' ')}: {count(f['slices'], 'slice')}, {count(f['files'], 'file')}, "
                f"{human_bytes(f['bytes'])}"
            )
        s = r["small_files"]
        out.append(f"    small files (< {human_bytes(s['limit'])}): {s['count']} ({human_bytes(s['bytes'])})")
        if r["bootstrap_base_path"]:
            out.append(
                f"    bootstrapped from {r['bootstrap_base_path']} ({r['bootstrap_base_files']} skeleton base files; "
                "the source files are never deleted)"
            )
        if r["savepoints"]:
            out.append("    savepoints: " + ", ".join(r["savepoints"]))
        if r["uncommitted_files"] or r["unrecognized_files"]:
            out.append(
                f"    ignored: {r['uncommitted_files']:,} uncommitted, "
                f"{count(r['unrecognized_files'], 'unrecognised file')}"
            )
        out.extend(f"    drift: {d}" for d in r["declaration_drift"])
        out.extend(_metadata_table_lines(r.get("metadata_table_check")))
        out.append("")
    failed = sum("error" in r for r in rows)
    drifted = sum(bool(r.get("declaration_drift")) for r in rows)
    out.append(f"Status: {count(len(rows) - failed, 'table')} read ({drifted:,} drifted from their `table:` block), "
               f"{failed:,} could not be read" + ("; fix the tables marked ! and run `runner status` again."
                                                  if failed else "."))
    return "\n".join(out)


def _metadata_table_lines(check: dict[str, Any] | None) -> list[str]:
    if check is None:
        return []
    if check["ok"]:
        return ["    metadata table: in step with the data timeline and with storage"]
    lines = [f"    metadata table: {problem}" for problem in check["problems"]]
    drift = check["drift"] or {}
    for label, key in (
        ("listed but absent", "listed_but_absent"),
        ("present but not listed", "present_but_unlisted"),
        ("partitions not listed", "partitions_unlisted"),
    ):
        paths = drift.get(key) or []
        if paths:
            shown = shortlist(paths, 5)
            lines.append(f"    metadata table {label}: {shown}")
    return lines
