"""Projects over `TableBuilder` tables, and the checks the safety attacks share."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from runner.cli import main

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
