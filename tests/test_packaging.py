"""The package builds without setuptools warnings about its metadata, and ships the report's assets."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_wheel_builds_without_license_warning_and_includes_the_report_assets(tmp_path):
    # Build from a copy: setuptools writes build/ and *.egg-info next to the sources it builds.
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "runner", source / "runner", ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path), str(source)],
                          check=False, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    output = done.stdout + done.stderr
    assert "project.license" not in output and "License classifiers are deprecated" not in output
    wheel = next(tmp_path.glob("hudi_runner-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert {"runner/docs/assets/site.js", "runner/docs/assets/site.css"} <= set(names)
    metadata = next(n for n in names if n.endswith("METADATA"))
    assert "License-Expression: Apache-2.0" in zipfile.ZipFile(wheel).read(metadata).decode()
