"""The localhost server of `evalrun view`: the site's pages over HTTP (stdlib
`ThreadingHTTPServer`), each built when asked, so a page is as fresh as the run's files.

It listens on 127.0.0.1 only, and answers only requests addressed to it by that name or
`localhost` (a page elsewhere that points its own host name at 127.0.0.1 - DNS rebinding - gets
403, not the runs). HTML pages carry the same Content-Security-Policy as their <meta> tag; a
sample's log file is sent as plain text with `nosniff`, so output an agent wrote is never run
as a page.
"""

from __future__ import annotations

from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from evalrun.errors import UsageError
from evalrun.report.page import CSP
from evalrun.report.view.index import DIFF_FILE, INDEX_FILE, RUNS_PREFIX
from evalrun.report.view.site import SAMPLES, NotFound, Page, Site, html_page, message_html

HOST = "127.0.0.1"


def answer(site: Site, target: str) -> tuple[HTTPStatus, Page]:
    """The page for a request target (`/`, `/runs/<key>/report.html`, `/diff.html?a=..&b=..`);
    a run that cannot be read or compared is a page saying why."""
    parts = urlsplit(target)
    path = unquote(parts.path).lstrip("/")
    home = "/" + INDEX_FILE
    try:
        if path in ("", INDEX_FILE):
            return HTTPStatus.OK, html_page(site.index())
        if path == DIFF_FILE:
            query = parse_qs(parts.query)
            a, b = query.get("a", [""])[0], query.get("b", [""])[0]
            return HTTPStatus.OK, html_page(site.diff_page(a, b))
        if path.startswith(RUNS_PREFIX + "/"):
            key, rest = site.split(path)
            if rest == "report.html":
                return HTTPStatus.OK, html_page(site.run_page(key))
            if rest.startswith(SAMPLES + "/"):
                found = site.sample_file(key, rest.removeprefix(SAMPLES + "/"))
                return HTTPStatus.OK, Page(found.read_bytes(), "text/plain; charset=utf-8")
        raise NotFound(f"{path or '/'}: no such page")
    except NotFound as exc:
        return HTTPStatus.NOT_FOUND, html_page(message_html("not found", str(exc), home))
    except UsageError as exc:
        return HTTPStatus.CONFLICT, html_page(message_html("cannot show this", str(exc), home))


class ViewServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, site: Site, port: int):
        self.site = site
        super().__init__((HOST, port), _Handler)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}/"


class _Handler(BaseHTTPRequestHandler):
    server: ViewServer

    def do_GET(self) -> None:
        port = self.server.server_address[1]
        if self.headers.get("Host") not in (f"{HOST}:{port}", f"localhost:{port}"):
            status = HTTPStatus.FORBIDDEN
            page = html_page(message_html("forbidden", "evalrun view answers only localhost", "/"))
        else:
            status, page = answer(self.server.site, self.path)
        self.send_response(status)
        self.send_header("Content-Type", page.content_type)
        self.send_header("Content-Length", str(len(page.body)))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(page.body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the terminal shows the URL, not every request."""


def serve(root: Path, port: int = 0) -> ViewServer:
    """A server over the runs under `root` on localhost (port 0: a free one), not yet serving:
    call `serve_forever()` on it."""
    return ViewServer(Site(root), port)
