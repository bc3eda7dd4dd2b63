"""The report in a real headless Chromium: the charts are drawn, and a screenshot is saved.

Chromium is Debian's `chromium` package. When it is absent the session fixture installs it with
apt-get (as root); the tests skip, saying why, only where that is impossible.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

from runner.cli import main
from tests.execute.test_cli_plan_apply import project as fixture_project

pytestmark = pytest.mark.browser

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
NOW = "20260106000000"


def _install_chromium() -> str | None:
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return None
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update"], ["apt-get", "install", "-y", "chromium"]):
        if subprocess.run(command, env=env, check=False, capture_output=True, timeout=900).returncode != 0:
            return None
    return shutil.which("chromium")


@pytest.fixture(scope="session")
def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser") or _install_chromium()
    if found is None:
        pytest.skip("Chromium is not installed and cannot be installed here "
                    "(needs root and apt-get: `apt-get install -y chromium`)")
    return found


def run_chromium(binary: str, *args: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        return subprocess.run([binary, *FLAGS, f"--user-data-dir={profile}", *args],
                              check=False, capture_output=True, text=True, timeout=120)


class Dom(HTMLParser):
    """Every element of the dumped DOM with its attributes and the chart and section it sits in."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str], str | None, str | None]] = []
        self.body: dict[str, str] = {}
        self.html = ""
        self._stack: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "body":
            self.body = a
        chart = next((x.get("data-chart") for _, x in reversed(self._stack) if "data-chart" in x), None)
        section = next((x["id"] for t, x in reversed(self._stack) if t == "section" and "id" in x), None)
        self.elements.append((tag, a, chart or a.get("data-chart"), section))
        if tag not in {"meta", "br", "img", "input", "link", "hr"}:  # HTML void elements
            self._stack.append((tag, a))

    def handle_endtag(self, tag: str) -> None:
        while self._stack:
            if self._stack.pop()[0] == tag:
                break

    def find(self, tag: str, *, chart: str | None = None, section: str | None = None,
             cls: str | None = None) -> list[dict[str, str]]:
        return [a for t, a, c, s in self.elements
                if t == tag and (chart is None or c == chart) and (section is None or s == section)
                and (cls is None or cls in a.get("class", "").split())]


def dump_dom(binary: str, index: Path) -> Dom:
    done = run_chromium(binary, "--virtual-time-budget=5000", "--dump-dom", index.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    dom = Dom()
    dom.html = done.stdout
    dom.feed(done.stdout)
    return dom


def generate(root: Path, out: Path | None = None) -> tuple[Path, dict]:
    out = out or root / "target" / "docs"
    assert main(["docs", "generate", "--project-dir", str(root), "--now", NOW, "--out", str(out)]) == 0
    index = out / "index.html"
    text = index.read_text()
    start = text.index('id="report-data">') + len('id="report-data">')
    return index, json.loads(text[start:text.index("</script>", start)])


def test_report_charts_render_in_chromium(chromium, demo_project, tmp_path, capsys):
    index, data = generate(demo_project, tmp_path / "site")
    dom = dump_dom(chromium, index)
    assert "data-render-error" not in dom.body, dom.body
    charts = dom.find("svg", cls="chart")
    expected = sum(2 + bool(t["reclaimable"]) + bool(t["timeline"]) for t in data["tables"])
    assert dom.body.get("data-rendered") == str(len(charts)) == str(expected)
    assert expected >= 3 * len(data["tables"]) + 1  # as of NOW, at least one table has bytes to reclaim
    for table in data["tables"]:
        section = f"table-{table['name']}"
        nonzero_bins = sum(1 for b in table["histogram"]["bins"] if b["count"])
        assert len(dom.find("rect", chart="histogram", section=section, cls="bar")) == nonzero_bins
        markers = dom.find("line", chart="histogram", section=section, cls="marker")
        assert sorted(int(m["data-value"]) for m in markers) == sorted(
            [table["histogram"]["small_file_limit"], table["histogram"]["max_file_size"]])
        bars = sum((r["active_groups"] > 0) + (r["replaced_groups"] > 0) for r in table["versions"]["versions"])
        assert len(dom.find("rect", chart="versions", section=section, cls="bar")) == bars
        assert len(dom.find("rect", chart="reclaimable", section=section, cls="bar")) == len(table["reclaimable"])
        circles = dom.find("circle", chart="timeline", section=section, cls="instant")
        assert sorted(c["data-kind"] for c in circles) == sorted(p["kind"] for p in table["timeline"])
    assert {a["href"] for a in dom.find("a")} >= {"#table-orders", "#table-events", "#table-customers", "#last-run"}
    # Byte sizes read as sizes; insert_split_size counts records and stays a number.
    assert "<td>file_sizing.max_file_size</td><td>1.0 MiB (1,048,576 bytes)</td>" in dom.html
    assert "<td>file_sizing.insert_split_size</td><td>10000</td>" in dom.html

    shot = tmp_path / "report.png"
    done = run_chromium(chromium, "--window-size=1400,3900", f"--screenshot={shot}", index.as_uri())
    assert done.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 50_000  # a blank page is a few KiB; the drawn report is far larger
    print(f"screenshot: {shot}")


def test_last_run_results_appear_after_a_real_apply(chromium, tmp_path, capsys, spark):
    root = fixture_project(tmp_path / "p")
    assert main(["apply", "--auto-approve", "--project-dir", str(root), "--now", NOW]) == 0
    index, data = generate(root)
    run = json.loads((root / "target" / "run_results.json").read_text())
    assert data["run_results"] == run
    dom = dump_dom(chromium, index)
    rows = [a for a in dom.find("tr") if "data-status" in a]
    assert [r["data-status"] for r in rows] == [t["status"] for t in run["tables"]] == ["success"]
