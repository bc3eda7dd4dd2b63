"""Fixture tables that carry a metadata table, extracted once per test session (read-only use)."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, extract_fixture, fixture_id
from tests.execute.conftest import spark_deleter  # noqa: F401  (the apply tests' Spark deleter)


def mdt_fixture_zips() -> list[Path]:
    """Every fixture zip whose table has a `.hoodie/metadata` folder."""
    found = []
    for zip_path in sorted(FIXTURES.rglob("*.zip")):
        with zipfile.ZipFile(zip_path) as archive:
            if any("/.hoodie/metadata/" in name and "__MACOSX" not in name for name in archive.namelist()):
                found.append(zip_path)
    return found


MDT_ZIPS = mdt_fixture_zips()
MDT_IDS = [fixture_id(z) for z in MDT_ZIPS]


@pytest.fixture(scope="session")
def mdt_tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Fixture id -> base path of a shared, read-only extraction. Tests must not modify these."""
    root = tmp_path_factory.mktemp("mdt_fixtures")
    return {fixture_id(z): extract_fixture(z, root / fixture_id(z).replace("/", "_")) for z in MDT_ZIPS}


def mdt_files(base: Path) -> list[Path]:
    """Every file under the table's `.hoodie/metadata` folder, sorted."""
    metadata = base / ".hoodie" / "metadata"
    return sorted(Path(d) / f for d, _, names in os.walk(metadata) for f in names)
