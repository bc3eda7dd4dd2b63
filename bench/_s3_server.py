"""A local S3-compatible server (moto) in its own process that counts the requests it serves.

Run by bench_s3_clean.py: `python bench/_s3_server.py` prints `http://127.0.0.1:<port>` on its
first line and serves until killed. Its own process keeps the server's Python work off the
benchmark's GIL. Counts are per HTTP method plus `POST ?delete` (DeleteObjects), read with
`GET /__requests__` (JSON) and reset with `DELETE /__requests__`; those two calls are not counted.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from moto.server import ThreadedMotoServer

COUNTS_PATH = "/__requests__"

Environ = dict[str, Any]
StartResponse = Callable[..., Any]


class Counting:
    """WSGI middleware: counts every request by kind, then hands it to moto."""

    def __init__(self, app: Callable[[Environ, StartResponse], Iterable[bytes]]) -> None:
        self.app = app
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
        if path == COUNTS_PATH:
            with self.lock:
                body = json.dumps(dict(self.counts)).encode()
                if method == "DELETE":
                    self.counts.clear()
            start_response("200 OK", [("Content-Type", "application/json")])
            return [body]
        query = environ.get("QUERY_STRING", "")
        kind = "DeleteObjects" if method == "POST" and "delete" in query.split("&") else method
        with self.lock:
            self.counts[kind] += 1
        return self.app(environ, start_response)


def main() -> None:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    wsgi = server._server  # the werkzeug server reads `.app` per request
    assert wsgi is not None
    wsgi.app = Counting(wsgi.app)
    host, port = server.get_host_and_port()
    print(f"http://{host}:{port}", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
