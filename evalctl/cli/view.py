"""`evalctl view`: the run store in the browser, served live or written as a static site.

Served on 127.0.0.1 by default, open to this machine only. Any other --host needs a token,
checked on every request: --token T, else one generated here; either way the URL printed
carries it once (`?token=`), and the browser keeps it as a cookie. The server only reads the
store, a page at a time and under a time limit per request (evalctl/view/app.py).
"""

from __future__ import annotations

import secrets as token_source
import socket
from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel
from rich.markup import escape

from evalctl.cli import options
from evalctl.cli.output import emit, stdout
from evalctl.errors import BadInputError, EvalctlError, ExitCode

DEFAULT_PORT = 8700
VIEW_EXTRA = "view"


class StaticOutput(BaseModel):
    out: str
    pages: int
    bytes: int
    store: str


def _render_static(out: StaticOutput) -> None:
    stdout.print(
        escape(f"wrote {out.pages} pages ({out.bytes} bytes) to {out.out} from {out.store}"),
        soft_wrap=True,
    )


def _require_extra() -> None:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise EvalctlError(
            "evalctl view needs Starlette and uvicorn, which are not installed",
            hint=f"pip install 'evalctl[{VIEW_EXTRA}]' (`make setup` installs it)",
            code=ExitCode.BAD_INPUT,
        ) from None


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise BadInputError(
            f"cannot listen on {host}:{port}: {exc.strerror}",
            field="--port" if exc.errno == 98 else "--host",
            hint="pick another --port (0: any free one)",
        ) from None
    sock.listen(128)
    return sock


def view(
    port: Annotated[
        int,
        typer.Option("--port", min=0, max=65535, help="Port to serve on (0: any free one)."),
    ] = DEFAULT_PORT,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="Address to bind. Anything but loopback needs a token (--token, else "
            "generated and printed).",
        ),
    ] = "127.0.0.1",
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            metavar="URL",
            help="The run store: a path, sqlite:///PATH or postgresql://... (default: "
            "EVALCTL_STORE, else \\[history] store in evalctl.toml, else the one under "
            "EVALCTL_HOME).",
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            metavar="T",
            help="The token every request must carry (required off loopback; default there: "
            "a generated one).",
        ),
    ] = None,
    static: Annotated[
        Path | None,
        typer.Option(
            "--static",
            metavar="OUT",
            help="Write the pages as a static site into OUT instead of serving them.",
        ),
    ] = None,
    page_size: Annotated[
        int, typer.Option("--page-size", min=1, max=500, help="Rows per page of a list.")
    ] = 50,
    time_limit: Annotated[
        float,
        typer.Option(
            "--time-limit", min=0.1, metavar="SECONDS", help="The most one page's queries take."
        ),
    ] = 5.0,
    as_json: Annotated[bool, options.JSON] = False,
) -> None:
    """Browse the run store in a browser: runs, cases, trends, flaky cases, diffs.

    Pages: / and /runs (filter with ?suite= &provider= &model= &branch= &since=), /runs/ID,
    /cases, /cases/SUITE/ID (?a=RUN&b=RUN: two answers side by side), /trends/SUITE, /flaky,
    /compare/A/B. Prints the URL, then serves until Ctrl-C. With --static OUT: writes the same
    pages as files and exits (compare pages for consecutive runs).
    """
    from evalctl.cli.history_store import store_url
    from evalctl.view.source import open_read_only

    url = store_url(options.read_only_settings(), options.environ(), store)
    if url is None:
        raise BadInputError("the run store is off: there is nothing to view", field="--store")
    if static is not None:
        from evalctl.view.static import write_site

        # Written once, not served: no request to bound, so a day rather than --time-limit.
        handle = open_read_only(url, time_limit_s=86_400.0)
        try:
            site = write_site(handle, static)
        finally:
            handle.close()
        emit(
            StaticOutput(out=site.out, pages=site.pages, bytes=site.bytes, store=handle.url),
            as_json,
            _render_static,
        )
        return
    _require_extra()
    from evalctl.view.app import ViewConfig, create_app, is_loopback

    # Fail now, not on the first request, when the store cannot be read.
    open_read_only(url, time_limit).close()
    if token is None and not is_loopback(host):
        token = token_source.token_urlsafe(24)
    if token is not None and not token.strip():
        raise BadInputError("the token is empty", field="--token")
    sock = _listen(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    address = f"http://{shown}:{bound}/" + (f"?token={token}" if token else "")
    app = create_app(
        ViewConfig(store_url=url, token=token, page_size=page_size, time_limit_s=time_limit)
    )
    import uvicorn

    from evalctl.history.store import display_url

    # The URL is printed as is: redaction would mask the token, which is the point of it.
    print(f"evalctl view: {address}", flush=True)
    print(f"store: {display_url(url)} (read-only); Ctrl-C stops", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])


def register(app: typer.Typer) -> None:
    app.command("view")(view)
