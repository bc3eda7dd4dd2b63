"""`runner docs serve`: serve the generated report folder over HTTP on localhost."""

from __future__ import annotations

import functools
import http.server
from pathlib import Path


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # the stdlib names it `format`
        pass  # one line per request would drown the URL the user needs


def make_server(directory: Path, *, host: str = "127.0.0.1", port: int = 8080) -> http.server.ThreadingHTTPServer:
    """A server for `directory` (not yet serving); port 0 picks a free port."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    return http.server.ThreadingHTTPServer((host, port), handler)
