"""A resize whose rewrite fails while the runner lives (a torn input file here) must not leave its
clustering pending: Hudi writers reject every update of a file group in pending clustering (the
default `SparkRejectUpdateStrategy`), Hudi's cleaner and archival stop at a pending instant, and a
cause that does not go away (the torn file) would keep it pending at every apply."""

from __future__ import annotations

import pytest

from runner.cli import main
from runner.hudi.instant import Action
from runner.hudi.state import read_table_metadata
from runner.storage import storage_for
from runner.testing.tables import TableBuilder
from tests.mdt.crash_states import assert_metadata_table_healthy
from tests.safety.conftest import SIZED, digest, project_for


@pytest.mark.parametrize("with_mdt", [False, True], ids=["plain", "metadata_table"])
def test_a_failed_rewrite_rolls_its_clustering_back(with_mdt, tmp_path, capsys):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"], version=8, metadata_table=with_mdt)
    builder.commit(writes=3)
    root = project_for(table, tmp_path / "project", retained=2, sizing=SIZED)
    torn = sorted(table.rglob("*.parquet"))[0]
    torn.write_bytes(b"\0" * torn.stat().st_size)  # an upload cut short: the right size, no footer
    before = digest(table)

    code = main(["apply", "--project-dir", str(root), "--auto-approve"])
    said = " ".join(capsys.readouterr().out.split())

    assert code == 1, said
    assert "Parquet magic bytes not found" in said and torn.name in said, said  # the file is named
    assert "the clustering was rolled back" in said, said
    meta = read_table_metadata(storage_for(str(table)))
    assert not meta.timeline.pending(Action.REPLACE_COMMIT, Action.CLUSTERING)
    assert not meta.replaced
    assert {k: v for k, v in digest(table).items() if "metadata" not in k} == \
        {k: v for k, v in before.items() if "metadata" not in k}  # the data timeline and files as they were
    if with_mdt:
        assert_metadata_table_healthy(table)
