"""Projects over `TableBuilder` tables, and the checks the safety attacks share."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.cli import main

if TYPE_CHECKING:
    import pyarrow as pa

    from runner.hudi.instant import InstantTime
    from runner.testing.tables import TableBuilder

SIZED = "{max_file_size: 10MiB, small_file_limit: 5MiB}"  # files of a few KiB are all small


def project_for(table: Path, root: Path, *, retained: int = 1, extra: str = "",
                sizing: str = "{small_file_limit: 0}") -> Path:
    """A project declaring `table` with KEEP_LATEST_FILE_VERSIONS and, by default, no file sizing."""
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text('name: safety\nspark: {master: "local[1]"}\n')
    (root / "tables" / "t.yml").write_text(
        f"name: t\npath: {table}\n"
        f"clean: {{policy: KEEP_LATEST_FILE_VERSIONS, file_versions_retained: {retained}}}\n"
        f"file_sizing: {sizing}\n" + extra
    )
    return root


def digest(root: Path) -> dict[str, str]:
    """Every file under `root` (the runner's lock folder aside) by content."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".locks" not in p.parts
    }


def saved_plan(root: Path, out: Path, capsys: Any) -> tuple[int, Path]:
    code = main(["plan", "--project-dir", str(root), "--out", str(out)])
    capsys.readouterr()
    return code, out


def apply_json(capsys: Any, *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["apply", *argv, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def new_row(builder: TableBuilder) -> pa.Table:
    """One record the builder's table does not hold (id 1000), without meta columns, for a write."""
    import pyarrow as pa

    rows = builder.expected_rows()
    rows = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    return pa.Table.from_pylist([{**rows.to_pylist()[0], "id": 1000}], schema=rows.schema)


def files_written_at(table: Path, time: InstantTime) -> list[str]:
    """The base files instant `time` wrote, relative to the table."""
    return sorted(str(p.relative_to(table)) for p in table.rglob(f"*_{time}.parquet"))


def archive_as_hudi_may(table: Path) -> list[str]:
    """Archive what Hudi's archiver may once the last clean is recorded, as far as its guard for
    replaced groups allows (`ClusteringUtils.getEarliestInstantToRetainForClustering`): every
    completed write requested before the first replacecommit or clustering at or after the last
    clean plan's earliest instant to retain (the clean's own time when it records none; every
    replacecommit when no clean has completed), bar the
    last completed write. Their instant files go, so files they wrote count as archived, hence
    committed. Returns their times."""
    from runner.hudi.instant import Action
    from runner.hudi.metadata import decode_clean_plan
    from runner.hudi.state import read_table_metadata
    from runner.storage import storage_for

    meta = read_table_metadata(storage_for(str(table)))
    folder = table / meta.timeline_folder
    cleans = meta.timeline.completed(Action.CLEAN)
    if cleans:
        last = max(cleans, key=lambda i: i.time)
        requested = folder / f"{last.time}.clean.requested"
        plan = decode_clean_plan(requested.read_bytes(), path=str(requested), base_path=str(table))
        lower = plan.earliest_instant_to_retain.timestamp if plan.earliest_instant_to_retain else str(last.time)
    else:  # no completed clean vouches for any replaced group: every replacecommit stays
        lower = "0" * 17
    replaces = [i.time for i in meta.timeline.instants if i.family is Action.REPLACE_COMMIT and i.time >= lower]
    pending = [i.time for i in meta.timeline.writes_and_compactions if not i.is_completed]
    bound = min([*replaces, *pending], default=None)
    # Hudi keeps some commits active however far its guards allow (`hoodie.keep.min.commits`): one here.
    archived = [i for i in meta.timeline.completed_writes[:-1] if bound is None or i.time < bound]
    for instant in archived:
        for f in folder.glob(f"{instant.time}*"):
            if not f.name.split(".", 1)[1].startswith("clean"):
                f.unlink()
    return [str(i.time) for i in archived]
