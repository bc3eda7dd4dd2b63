"""A table bootstrapped by Hudi's metadata-only bootstrap keeps its records' columns outside it.

`hoodie.bootstrap.mode=METADATA_ONLY` turns an existing Parquet table into a Hudi table without
copying it: each source file gets a *skeleton* base file, instant `00000000000001`, holding only the
`_hoodie_*` meta columns, and Hudi's readers stitch each skeleton row to the source file's row at the
same position (the bootstrap index under `.hoodie/.aux/.bootstrap` maps file groups to source files).
A skeleton is small, so it looks like the first thing a resize should rewrite; but the rewritten
file holds the meta columns alone, in a new file group no bootstrap index knows, and once it replaces
the skeleton's group every reader sees those records without a single data column.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from runner.hudi.state import read_table_metadata
from runner.storage import storage_for
from runner.testing.tables import TableBuilder
from tests.safety.conftest import SIZED, apply_json, digest, project_for, saved_plan

SKELETON_INSTANT = "00000000000001"  # Hudi's METADATA_BOOTSTRAP_INSTANT_TS


def _bootstrapped(root: Path) -> tuple[Path, Path]:
    """A table whose partition `p=a` came from a metadata-only bootstrap of `root/source` (two
    skeletons over two source files) and whose partition `p=b` a later commit wrote (two small
    ordinary base files). Hudi's bootstrap index files are left out: the runner never reads them."""
    table, source = root / "t", root / "source"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"])
    first = builder.commit(writes={"p=a": 2})
    builder.commit(writes={"p=b": 2})
    renamed = {}
    for written in sorted((table / "p=a").glob(f"*_{first}.parquet")):
        rows = pq.read_table(written)
        file_id = written.name.split("_")[0]
        skeleton = f"{file_id}_1-0-1_{SKELETON_INSTANT}.parquet"
        meta = [c for c in rows.column_names if c.startswith("_hoodie_")]
        (source / "p=a").mkdir(parents=True, exist_ok=True)
        pq.write_table(rows.drop_columns(meta), source / "p=a" / f"part-{file_id}.parquet")
        columns = {c: rows.column(c) for c in meta}
        columns["_hoodie_commit_time"] = pa.array([SKELETON_INSTANT] * rows.num_rows)
        columns["_hoodie_file_name"] = pa.array([skeleton] * rows.num_rows)
        pq.write_table(pa.table(columns), table / "p=a" / skeleton)
        written.unlink()
        renamed[written.name] = skeleton
    hoodie = table / ".hoodie"
    for suffix in (".commit.requested", ".inflight", ".commit"):
        text = (hoodie / f"{first}{suffix}").read_text()
        for old, new in renamed.items():
            text = text.replace(old, new)
        text = text.replace('"INSERT"', '"BOOTSTRAP"').replace(str(first), SKELETON_INSTANT)
        (hoodie / f"{SKELETON_INSTANT}{suffix}").write_text(text)
        (hoodie / f"{first}{suffix}").unlink()
    properties = hoodie / "hoodie.properties"
    properties.write_text(properties.read_text() + f"hoodie.bootstrap.base.path={source}\n"
                          "hoodie.bootstrap.index.class=org.apache.hudi.common.bootstrap.index.HFileBootstrapIndex\n")
    return table, source


def _partition(table: Path, partition: str) -> dict[str, str]:
    return {path: sha for path, sha in digest(table).items() if path.startswith(f"{partition}/")}


def _replaced_groups(table: Path) -> set[tuple[str, str]]:
    meta = read_table_metadata(storage_for(str(table)))
    return set(meta.replaced)


def test_skeleton_files_of_a_metadata_only_bootstrap_are_never_resized(tmp_path, capsys):
    table, source = _bootstrapped(tmp_path)
    root = project_for(table, tmp_path / "project", sizing=SIZED)
    skeletons, sources = _partition(table, "p=a"), digest(source)

    code, plan_file = saved_plan(root, tmp_path / "plan.json", capsys)

    assert code == 2
    planned = json.loads(plan_file.read_text())["tables"][0]
    resize = next(s for s in planned["steps"] if s["kind"] == "resize")
    assert [g["partition"] for g in resize["groups"]] == ["p=b"]  # the ordinary small files still are
    notes = planned["notes"]
    assert any("bootstrap" in note and "2 small skeleton base files" in note for note in notes), notes

    code, report = apply_json(capsys, "--project-dir", str(root), str(plan_file))

    assert code == 0, report
    assert _partition(table, "p=a") == skeletons
    assert digest(source) == sources
    assert {p for p, _ in _replaced_groups(table)} == {"p=b"}


def test_a_saved_plan_that_adds_the_skeletons_to_a_resize_is_refused(tmp_path, capsys):
    table, _ = _bootstrapped(tmp_path)
    root = project_for(table, tmp_path / "project", sizing=SIZED)
    code, plan_file = saved_plan(root, tmp_path / "plan.json", capsys)
    assert code == 2
    data = json.loads(plan_file.read_text())
    resize = next(s for s in data["tables"][0]["steps"] if s["kind"] == "resize")
    files = [{"file_id": p.name.split("_")[0], "path": f"p=a/{p.name}", "size": p.stat().st_size}
             for p in sorted((table / "p=a").glob("*.parquet"))]
    resize["groups"].append({**resize["groups"][0], "partition": "p=a", "files": files})
    plan_file.write_text(json.dumps(data))
    before = digest(table)

    code, report = apply_json(capsys, "--project-dir", str(root), str(plan_file))

    assert code == 1, report
    assert files[0]["path"] in report["tables"][0]["error"]["message"]
    assert digest(table) == before


def test_an_interrupted_resize_of_skeleton_files_is_rolled_back_not_finished(tmp_path, capsys):
    """A resize of skeletons scheduled before this protection (or by hand) is never completed."""
    from datetime import UTC, datetime

    from runner.execute.resize import ResizeRunner
    from runner.plan.model import FileToRewrite, RewriteGroup, SizingStep

    table, _ = _bootstrapped(tmp_path)
    root = project_for(table, tmp_path / "project", sizing=SIZED)
    skeletons = _partition(table, "p=a")
    storage = storage_for(str(table))
    inputs = tuple(FileToRewrite(p.name.split("_")[0], f"p=a/{p.name}", p.stat().st_size)
                   for p in sorted((table / "p=a").glob("*.parquet")))
    ResizeRunner(storage, read_table_metadata(storage), spark=None,  # type: ignore[arg-type]
                 clock=lambda: datetime.now(UTC)).schedule(
        SizingStep(10 << 20, 5 << 20, (RewriteGroup("p=a", inputs),)))
    pending = read_table_metadata(storage).runner_pending_clustering
    assert len(pending) == 1

    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")

    notes = " ".join(report["tables"][0]["notes"])
    assert f"rolled back the interrupted resize {pending[0]}" in notes and "skeleton" in notes, report
    assert _partition(table, "p=a") == skeletons
    assert "p=a" not in {p for p, _ in _replaced_groups(table)}
    assert code == 0, report
    assert pending[0] not in {i.time for i in read_table_metadata(storage).timeline.completed_writes}


def _source_rows(source: Path, count: int) -> pa.Table:
    return pa.concat_tables(pq.read_table(f) for f in sorted((source / "p=a").glob("*.parquet"))).slice(0, count)


def test_runner_write_refuses_to_update_a_skeleton_naming_it(tmp_path):
    """Its merge would copy the skeleton's rows, keys only, into the group's next base file."""
    import pytest

    import runner
    from runner.errors import RefusedError

    table, source = _bootstrapped(tmp_path)
    root = project_for(table, tmp_path / "project")
    skeletons, sources = _partition(table, "p=a"), digest(source)
    update = _source_rows(source, 1)

    with pytest.raises(RefusedError) as refused:
        runner.write(update, "t", operation="upsert", project_dir=str(root))

    assert "metadata-only bootstrap" in refused.value.message
    assert any(name.rsplit("/", 1)[-1].split("_")[0] in refused.value.message for name in skeletons)
    assert _partition(table, "p=a") == skeletons
    assert digest(source) == sources


def test_runner_write_inserts_beside_skeletons_not_into_them(tmp_path):
    """A skeleton is a small file, but inserting into it is a merge: new records get a new group."""
    import runner

    table, source = _bootstrapped(tmp_path)
    root = project_for(table, tmp_path / "project", sizing=SIZED)  # the skeletons are small files
    skeletons = _partition(table, "p=a")
    new = _source_rows(source, 2)
    new = new.set_column(new.column_names.index("id"), "id", pa.array([1000, 1001], new.schema.field("id").type))

    result = runner.write(new, "t", operation="insert", project_dir=str(root))

    assert result.num_inserts == 2 and result.num_updates == 0
    assert {k: v for k, v in _partition(table, "p=a").items() if k in skeletons} == skeletons
    written = [table / f for f in result.files]
    assert len(written) == 1 and written[0].parent.name == "p=a"
    assert sorted(pq.read_table(written[0]).column("id").to_pylist()) == [1000, 1001]
