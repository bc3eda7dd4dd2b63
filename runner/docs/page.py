"""One self-contained HTML file: the stylesheet, the script and the data are all inlined.

No CDN and no fetch: users open reports on machines without network access, and from file://,
where browsers block reading neighbouring JSON files.
"""

from __future__ import annotations

import html
import json
from importlib.resources import files
from pathlib import Path
from typing import Any

from runner.output_paths import replace_text

INDEX = "index.html"


def render_page(data: dict[str, Any]) -> str:
    assets = files("runner.docs") / "assets"
    css = (assets / "site.css").read_text(encoding="utf-8")
    script = (assets / "site.js").read_text(encoding="utf-8")
    title = html.escape(f"{data['project']}: Hudi tables report")
    return (
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{title}</title>\n"
        f"<style>\n{css}</style>\n</head>\n<body>\n<nav></nav>\n<main></main>\n"
        f"<script type=\"application/json\" id=\"report-data\">{embed_json(data)}</script>\n"
        f"<script>\n{script}</script>\n</body>\n</html>\n"
    )


def embed_json(data: dict[str, Any]) -> str:
    """JSON safe inside <script>: `<`, `>` and `&` escaped so no value can close the element."""
    text = json.dumps(data, indent=None, separators=(",", ":"), sort_keys=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def write_site(data: dict[str, Any], out_dir: Path) -> Path:
    """Write `index.html` (in one rename, `replace_text`: a reader never sees half a page, and two
    reports written at once leave one whole); return its path."""
    target = out_dir / INDEX
    replace_text(target, render_page(data))
    return target
