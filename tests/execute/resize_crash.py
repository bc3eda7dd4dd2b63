"""Kill a resize task mid-file in a process of its own, as a crashed Spark task would die."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.execute.resize import ResizeRunner
from runner.failpoints import EXIT_CODE
from runner.hudi.files import BaseFile
from runner.hudi.instant import Instant
from tests.execute.test_resize import clock

FILE_ID, WRITE_TOKEN = "dead0000-0", "0-9-9"


@dataclass(frozen=True)
class KilledTask:
    pending: Instant  # the resize instant scheduled before the task ran
    folder: Path  # the group's partition folder
    name: str  # the base file the task was writing, which must not exist
    left: str  # the hidden temporary file it left behind


def kill_group_task(table: Path, storage: Any, metadata: Any, spark: Any, step: Any, group: Any, *,
                    script: str, workdir: Path) -> KilledTask:
    """Schedule `step`, then run `script` (argv: table, partition, file id, instant, inputs...) on
    `group` with the `mid_rewrite` failpoint armed; check it died leaving only a temporary file."""
    pending, _ = ResizeRunner(storage, metadata, spark=spark, clock=clock).schedule(step)
    folder = table / group.partition
    listed = {p.name for p in folder.iterdir()}
    task = workdir / "task.py"
    task.write_text(script)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNNER_")} | {"RUNNER_FAILPOINT": "mid_rewrite"}

    killed = subprocess.run(
        [sys.executable, str(task), str(table), group.partition, FILE_ID, str(pending.time),
         *(f.path for f in group.files)],
        check=False, capture_output=True, text=True, env=env, timeout=300,
    )

    assert killed.returncode == EXIT_CODE, killed.stderr[-3000:]
    name = BaseFile(FILE_ID, WRITE_TOKEN, pending.time, "parquet").name
    (left,) = {p.name for p in folder.iterdir()} - listed
    assert re.fullmatch(rf"\.{re.escape(name)}\.[0-9a-f]{{32}}\.tmp", left)
    assert not (folder / name).exists()
    return KilledTask(pending, folder, name, left)
