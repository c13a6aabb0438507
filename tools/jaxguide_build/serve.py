"""Serve the built site on 127.0.0.1 as GitHub Pages serves it (build tooling, not part of
the jaxguide package).

GitHub Pages compresses text (HTML, CSS, JavaScript, JSON, SVG) with gzip when the browser
accepts it, and sends ``Cache-Control: max-age=600``. A plain ``python -m http.server``
does neither, so a page measured through it transfers several times the bytes a reader
downloads. The browser tests (``tests/test_browser.py``), ``bench/lighthouse.py`` and
``make serve`` use this server, so that what they measure is what readers get.

    python tools/jaxguide_serve.py _build/html --port 8000   # make serve
"""

from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import io
import sys
import threading
from pathlib import Path
from typing import Any, BinaryIO

# Types GitHub Pages compresses (the ones a site like this one serves).
COMPRESSED = (
    "text/",
    "application/javascript",
    "application/json",
    "image/svg+xml",
    "application/xml",
)


class GzipHandler(http.server.SimpleHTTPRequestHandler):
    """``SimpleHTTPRequestHandler`` that gzips text types for a client that accepts gzip
    (``Content-Encoding: gzip``, ``Vary: Accept-Encoding``), caches the compressed bytes
    per file and modification time, and sends ``Cache-Control: max-age=600``."""

    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".js": "application/javascript",
        ".svg": "image/svg+xml",
        ".woff2": "font/woff2",
        ".ipynb": "application/json",
        ".json": "application/json",
    }
    protocol_version = "HTTP/1.1"  # keep-alive, as a real host
    _cache: dict[tuple[str, int], bytes] = {}
    _lock = threading.Lock()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base's name)
        pass

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "max-age=600")
        super().end_headers()

    def _gzipped(self, path: str) -> bytes:
        stat = Path(path).stat()
        key = (path, stat.st_mtime_ns)
        with self._lock:
            cached = self._cache.get(key)
        if cached is None:
            cached = gzip.compress(Path(path).read_bytes(), compresslevel=6, mtime=0)
            with self._lock:
                self._cache[key] = cached
        return cached

    def send_head(self) -> io.BytesIO | BinaryIO | None:
        path = self.translate_path(self.path)
        if Path(path).is_dir():
            if not self.path.split("?")[0].split("#")[0].endswith("/"):
                return super().send_head()  # which redirects "dir" to "dir/"
            path = str(Path(path) / "index.html")
        accepts = "gzip" in self.headers.get("Accept-Encoding", "")
        ctype = self.guess_type(path)
        if not (accepts and Path(path).is_file() and ctype.startswith(COMPRESSED)):
            return super().send_head()
        body = self._gzipped(path)
        self.send_response(200)
        self.send_header("Content-Type", ctype + ("; charset=utf-8" if "text/" in ctype else ""))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Vary", "Accept-Encoding")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)


class _Server(http.server.ThreadingHTTPServer):
    """A browser that closes a page while a response is on its way (a test moving on,
    a reader clicking a link) is no error of the server's: it is not reported."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def serve(directory: Path, port: int = 0) -> tuple[str, http.server.ThreadingHTTPServer]:
    """Serve ``directory`` on 127.0.0.1 (``port``, or a free one) from a daemon thread;
    returns ``(base_url, server)``; stop it with ``server.shutdown()``."""
    server = _Server(("127.0.0.1", port), functools.partial(GzipHandler, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/", server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path, nargs="?", default=Path("_build/html"))
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    base, server = serve(args.directory, args.port)
    print(f"Serving {args.directory} with gzip at {base} (Ctrl+C stops)")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.shutdown()


if __name__ == "__main__":
    main()
