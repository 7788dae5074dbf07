"""The live viewer: a Starlette app over the store, GET pages only.

Every request opens the store read-only with the request's deadline (`source`), builds its
page (`pages`) and draws it (`render`). A request is bounded: lists come a page at a time
(`limit` capped by `max_page_size`) and the queries stop at `time_limit_s` (503).

Access: on a loopback bind the pages are open to this machine, and only requests naming a
loopback host are served (a web page elsewhere cannot reach them by rebinding its DNS name to
127.0.0.1). On any other bind every request must carry the token: `?token=T` once (answered
with a cookie and a redirect to the same page without it), then the cookie, or
`Authorization: Bearer T`.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from evalctl.errors import BadInputError
from evalctl.history.store import StoreError
from evalctl.view import pages
from evalctl.view.links import Links
from evalctl.view.render import render
from evalctl.view.source import open_read_only, timed_out

COOKIE = "evalctl_view_token"
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
DEFAULT_TIME_LIMIT_S = 5.0
# No script runs on these pages, nothing is fetched from elsewhere, no form posts elsewhere.
_HEADERS = {
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True)
class ViewConfig:
    store_url: str
    # Required on every request when set (a non-loopback bind); None: loopback only.
    token: str | None = None
    page_size: int = DEFAULT_PAGE_SIZE
    max_page_size: int = MAX_PAGE_SIZE
    time_limit_s: float = DEFAULT_TIME_LIMIT_S


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_name(header: str) -> str:
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class Guard:
    """The access rule above, in front of the app (plain ASGI, so it sees every request)."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        if self.token is None:
            if not is_loopback(_host_name(headers.get("host", ""))):
                await _plain(421, "this viewer answers only to a loopback host name")(
                    scope, receive, send
                )
                return
            await self.app(scope, receive, send)
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"))
        given = dict(query).get("token")
        if given is not None:
            if not self._valid(given):
                await _plain(403, "wrong token")(scope, receive, send)
                return
            # Trade the token in the address for a cookie: the address can then be shared,
            # and the token stays out of history and logs.
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            # One leading slash: `//host/...` would send the browser to another site.
            target = "/" + quote(scope["path"].lstrip("/")) + ("?" + rest if rest else "")
            response = RedirectResponse(target, status_code=303)
            response.set_cookie(COOKIE, given, httponly=True, samesite="strict", path="/")
            await response(scope, receive, send)
            return
        cookie: SimpleCookie = SimpleCookie()
        with contextlib.suppress(CookieError):  # a malformed Cookie header carries no token
            cookie.load(headers.get("cookie", ""))
        bearer = headers.get("authorization", "")
        candidates = [cookie[COOKIE].value] if COOKIE in cookie else []
        if bearer.lower().startswith("bearer "):
            candidates.append(bearer[7:].strip())
        if not any(self._valid(c) for c in candidates):
            await _plain(401, "this viewer needs its token: open the URL it printed")(
                scope, receive, send
            )
            return
        await self.app(scope, receive, send)

    def _valid(self, given: str) -> bool:
        assert self.token is not None
        return hmac.compare_digest(given.encode(), self.token.encode())


def _plain(status: int, message: str) -> Response:
    return Response(message + "\n", status_code=status, media_type="text/plain", headers=_HEADERS)


def _page(config: ViewConfig, build: Callable[..., pages.Page], **kwargs: Any) -> Response:
    try:
        store = open_read_only(config.store_url, config.time_limit_s)
    except (StoreError, BadInputError) as exc:
        return _error(503, "The run store cannot be read", exc.message)
    try:
        page = build(store, links=Links(), **kwargs)
        suites = pages.suites(store)
    except pages.NotFound as exc:
        return _error(404, "Not found", str(exc))
    except StoreError as exc:
        if timed_out(exc):
            return _error(
                503,
                "Too slow",
                f"this page's queries ran past the viewer's limit of {config.time_limit_s:g} s; "
                "narrow it with filters or a smaller page",
            )
        return _error(503, "The run store cannot be read", exc.message)
    finally:
        store.close()
    html = render(page.template, {"title": page.title, **page.context}, Links(), suites)
    return HTMLResponse(html, headers=_HEADERS)


def _error(status: int, title: str, message: str) -> Response:
    html = render("error.html", {"title": title, "message": message}, Links(), [])
    return HTMLResponse(html, status_code=status, headers=_HEADERS)


def _bounds(config: ViewConfig, request: Request) -> pages.Window:
    def number(name: str, default: int, high: int) -> int:
        raw = request.query_params.get(name, "")
        return min(max(int(raw), 1), high) if raw.isdigit() else default

    size = number("limit", config.page_size, config.max_page_size)
    return pages.Window(page=number("page", 1, 1_000_000), size=size)


def create_app(config: ViewConfig) -> ASGIApp:
    """The viewer's ASGI app: Starlette's routes behind the access guard."""

    def params(request: Request) -> dict[str, str]:
        return {k: v for k, v in request.query_params.items() if k not in ("page", "limit")}

    async def runs(request: Request) -> Response:
        return await _threaded(
            _page, config, pages.runs, window=_bounds(config, request), query=params(request)
        )

    async def run(request: Request) -> Response:
        return await _threaded(
            _page,
            config,
            pages.run,
            run_id=request.path_params["run_id"],
            window=_bounds(config, request),
            query=params(request),
        )

    async def cases(request: Request) -> Response:
        return await _threaded(
            _page, config, pages.cases, window=_bounds(config, request), query=params(request)
        )

    async def case(request: Request) -> Response:
        return await _threaded(
            _page,
            config,
            pages.case,
            suite=request.path_params["suite"],
            case_id=request.path_params["case_id"],
            query=params(request),
            window=_bounds(config, request),
        )

    async def trends(request: Request) -> Response:
        return await _threaded(
            _page,
            config,
            pages.trends,
            suite=request.path_params["suite"],
            query=params(request),
            window=_bounds(config, request),
        )

    async def flaky(request: Request) -> Response:
        return await _threaded(
            _page, config, pages.flaky, window=_bounds(config, request), query=params(request)
        )

    async def compare(request: Request) -> Response:
        return await _threaded(
            _page,
            config,
            pages.compare,
            a=request.path_params["a"],
            b=request.path_params["b"],
            window=_bounds(config, request),
        )

    routes = [
        Route("/", runs, methods=["GET"]),
        Route("/runs", runs, methods=["GET"]),
        Route("/runs/{run_id}", run, methods=["GET"]),
        Route("/cases", cases, methods=["GET"]),
        Route("/cases/{suite}/{case_id:path}", case, methods=["GET"]),
        Route("/trends/{suite}", trends, methods=["GET"]),
        Route("/flaky", flaky, methods=["GET"]),
        Route("/compare/{a}/{b}", compare, methods=["GET"]),
    ]
    return Guard(Starlette(routes=routes), config.token)


async def _threaded(fn: Callable[..., Response], *args: Any, **kwargs: Any) -> Response:
    # The store's drivers block: a page is built on a worker thread, not the event loop.
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(fn, *args, **kwargs)
