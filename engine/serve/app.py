"""The HTTP side of ``gpusizer serve`` (FastAPI): routes, the access token, limits, one error shape.

This process reads no request's content beyond its size: bodies go, as text, to a worker
process (``pool``), which parses and answers them. Every failure, from a malformed body to a
worker that died, is answered in one shape (``work.error_body``) with the HTTP status that fits.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import re
import sys
import time
import traceback
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import InputError
from . import openapi
from .pool import Busy, Crashed, Pool, TimedOut
from .sweeps import FILES, SUMMARY_CSP, Jobs, Limits
from .work import Failure, diagnostic, error_body, parse_form

API = "/api/v1"
COOKIE = "gpusizer_token"
STATIC_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
}
_CODES = {
    400: "bad-request",
    401: "unauthorized",
    404: "not-found",
    405: "method-not-allowed",
    408: "request-timeout",
    409: "not-finished",
    413: "too-large",
    415: "unsupported-media-type",
    422: "invalid-input",
    429: "busy",
    500: "internal",
    503: "unavailable",
}


@dataclass
class Options:
    """How the server answers: the token (None: none needed), limits and CORS origins."""

    token: str | None = None
    max_body: int = 2 << 20
    timeout: float = 30.0
    cors: list[str] = field(default_factory=list)
    loopback_only: bool = True  # without a token: only Host headers naming this machine (DNS rebinding)
    sweeps: Limits = field(default_factory=Limits)  # sweep jobs: how many, how large, for how long
    sweep_batch: Any = None  # a sweep's batch function (engine.sweep.worker.run_many when None)


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and localhost."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_name(header: str) -> str:
    """The host part of a Host header: 'h', 'h:port', '[v6]:port'."""
    if header.startswith("["):
        return header[: header.find("]") + 1] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def failure_response(f: Failure, headers: dict[str, str] | None = None) -> JSONResponse:
    """The error shape, as JSON, with its status."""
    return JSONResponse(f.body(), status_code=f.status, headers=headers)


def _reply(reply: dict[str, Any], attachment: str | None = None) -> Response:
    headers = dict(reply.get("headers") or {})
    if attachment:
        headers["Content-Disposition"] = f'attachment; filename="{attachment}"'
    return Response(reply["body"], status_code=int(reply["status"]), media_type=reply["content_type"], headers=headers)


def create_app(pool: Pool, options: Options) -> FastAPI:  # noqa: C901 - one closure per route
    """The FastAPI application over a started pool of workers."""
    from .. import __version__

    jobs = Jobs(
        pool.settings.rules,
        pool.settings.knowledge,
        str(pool.info.get("sha256", "")),
        options.sweeps,
        fn=options.sweep_batch,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await asyncio.to_thread(jobs.close)  # stop the sweep jobs, remove their folders

    app = FastAPI(
        title="gpusizer",
        version=__version__,
        description=openapi.description(),
        docs_url=None,  # FastAPI's docs pages load their scripts from a CDN; /api/v1/docs is served from here
        redoc_url=None,
        openapi_url=f"{API}/openapi.json",
        lifespan=lifespan,
    )
    app.state.pool = pool
    app.state.options = options
    app.state.jobs = jobs

    if options.cors:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=options.cors,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["Authorization", "Content-Type"],
            expose_headers=["Gpusizer-Decision-Id", "Location"],
        )

    @app.middleware("http")
    async def guard(request: Request, call_next: Any) -> Response:
        """The Host header (without a token) and the token (with one), before any route runs."""
        path = request.url.path
        if options.token is None and options.loopback_only:
            host = _host_name(request.headers.get("host", ""))
            if not is_loopback(host):
                return failure_response(
                    Failure(
                        400,
                        "bad-host",
                        f"this server answers requests to this machine only, not to host {host!r}",
                        help="open it as http://127.0.0.1:PORT, or start it with --token-file to serve others",
                    )
                )
        if options.token is not None and not _public(path) and not _authorized(request, options.token, path):
            if request.method == "GET" and path == "/":
                return RedirectResponse(
                    "/login?next=" + quote(path + ("?" + request.url.query if request.url.query else "")),
                    status_code=303,
                )
            return failure_response(
                Failure(
                    401,
                    "unauthorized",
                    "this server needs its access token",
                    help="send 'Authorization: Bearer TOKEN' (the token is in the server's --token-file)",
                ),
                {"WWW-Authenticate": "Bearer"},
            )
        started = time.monotonic()
        response: Response = await call_next(request)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        if response.headers.get("content-type", "").startswith("text/html"):
            response.headers.setdefault(
                "Content-Security-Policy",
                "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
                "frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
            )
        response.headers["Server-Timing"] = f"total;dur={(time.monotonic() - started) * 1000:.1f}"
        return response

    # -- errors, all in one shape ----------------------------------------------------------------
    @app.exception_handler(Failure)
    async def _failure(request: Request, exc: Failure) -> JSONResponse:
        return failure_response(exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _CODES.get(exc.status_code, f"http-{exc.status_code}")
        message = {
            404: f"no such page: {request.url.path}",
            405: f"{request.method} is not allowed on {request.url.path}",
        }.get(exc.status_code, str(exc.detail))
        return failure_response(Failure(exc.status_code, code, message, help="see /api/v1/docs for the API"))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        diags = [
            diagnostic(str(e.get("msg", "invalid")), help=".".join(map(str, e.get("loc", ())))) for e in exc.errors()
        ]
        return failure_response(Failure(400, "bad-request", "the request's parameters are not valid", diags))

    @app.exception_handler(Exception)
    async def _bug(request: Request, exc: Exception) -> JSONResponse:
        traceback.print_exc(file=sys.stderr)
        return failure_response(
            Failure(
                500, "internal", f"internal error: {type(exc).__name__}", help="this is a bug in gpusizer; report it"
            )
        )

    # -- health --------------------------------------------------------------------------------------
    @app.get("/healthz", tags=["health"], summary="The server process answers")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get(
        "/readyz", tags=["health"], summary="At least one worker has the rulebase loaded", responses=openapi.ERRORS
    )
    async def readyz() -> Response:
        alive = pool.alive
        if alive == 0:
            return failure_response(Failure(503, "not-ready", "no worker is running; replacements are starting"))
        return JSONResponse({"status": "ready", "workers": alive, "size": pool.size, "waiting": pool.waiting})

    # -- the API -------------------------------------------------------------------------------------
    async def forward(request: Request, msg: dict[str, Any]) -> dict[str, Any]:
        """Send a request to a worker; transport failures become errors in the one shape."""
        try:
            return await pool.call(msg)
        except Busy:
            raise Failure(
                429,
                "busy",
                f"the server is answering {pool.size} requests and {pool.waiting} more are waiting",
                help="try again in a moment",
            ) from None
        except TimedOut:
            raise Failure(
                503,
                "timeout",
                f"the request took longer than {options.timeout:g} s and was stopped",
                help="ask for less in one request (a shorter sweep, a smaller search), "
                "or start the server with a larger --timeout",
            ) from None
        except Crashed as exc:
            raise Failure(
                500,
                "worker-crashed",
                f"the rule engine's process {exc.how} while it answered this request; the server goes on",
                help="this is a bug in gpusizer or durable-rules; report it with the workload",
            ) from None

    async def body_of(request: Request) -> str:
        """The body as text, within the size and time limits."""
        length = request.headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                raise Failure(400, "bad-request", "Content-Length is not a number")
            if int(length) > options.max_body:
                raise _too_large(int(length), options.max_body)
        chunks: list[bytes] = []
        size = 0

        async def read() -> None:
            nonlocal size
            async for chunk in request.stream():
                size += len(chunk)
                if size > options.max_body:
                    raise _too_large(size, options.max_body)
                chunks.append(chunk)

        try:
            await asyncio.wait_for(read(), options.timeout)
        except TimeoutError:
            raise Failure(
                408, "request-timeout", f"the request body did not arrive within {options.timeout:g} s"
            ) from None
        from ..load.yamlsrc import decode

        try:
            return decode(b"".join(chunks), "<request>")
        except InputError as exc:
            raise Failure(400, "bad-request", f"the request body is not UTF-8 text: {exc.message}") from None

    async def operation(request: Request, op: str, **extra: Any) -> Response:
        body = await body_of(request)
        query: dict[str, list[str]] = {}
        for k, v in request.query_params.multi_items():
            query.setdefault(k, []).append(v)
        reply = await forward(
            request,
            {"op": op, "content_type": request.headers.get("content-type", ""), "body": body, "query": query, **extra},
        )
        return _reply(reply)

    for op, summary in openapi.OPERATIONS.items():

        def make(op: str = op) -> Any:
            async def endpoint(request: Request) -> Response:
                return await operation(request, op)

            return endpoint

        app.post(
            f"{API}/{op}",
            tags=["decisions"],
            summary=summary,
            description=openapi.OPERATION_DOCS[op],
            openapi_extra=openapi.request_body(op),
            responses=openapi.responses(op),
            response_model=None,
        )(make())

    # -- sweeps: jobs ----------------------------------------------------------------------------------
    @app.post(
        f"{API}/sweep",
        tags=["sweeps"],
        summary="Start a sweep: many workloads from one specification, run as a job",
        description=openapi.SWEEP_DOC,
        openapi_extra=openapi.sweep_request(),
        responses=openapi.sweep_responses(202, job=False),
        response_model=None,
        status_code=202,
    )
    async def sweep_start(request: Request) -> Response:
        jobs.room()
        body = await body_of(request)
        query: dict[str, list[str]] = {}
        for k, v in request.query_params.multi_items():
            query.setdefault(k, []).append(v)
        msg = {
            "op": "sweep",
            "content_type": request.headers.get("content-type", ""),
            "body": body,
            "query": query,
            "max_cases": jobs.limits.max_cases,
        }
        reply = await forward(request, msg)
        if int(reply["status"]) != 200:
            return _reply(reply)
        job = await asyncio.to_thread(lambda: jobs.start(json.loads(reply["body"])))
        return JSONResponse(jobs.status(job), status_code=202, headers={"Location": f"{API}/sweep/{job.id}"})

    @app.get(
        f"{API}/sweep",
        tags=["sweeps"],
        summary="The sweep jobs the server holds",
        responses=openapi.sweep_list_responses(),
    )
    async def sweep_list(request: Request) -> Response:
        no_query(request)
        return JSONResponse({"jobs": jobs.listing()})

    @app.get(
        f"{API}/sweep/{{job}}",
        tags=["sweeps"],
        summary="A sweep job: status, cases done and failed of the total, rate, time left",
        responses=openapi.sweep_responses(200),
    )
    async def sweep_poll(request: Request, job: str) -> Response:
        no_query(request)
        return JSONResponse(jobs.status(jobs.get(job)))

    @app.post(
        f"{API}/sweep/{{job}}/cancel",
        tags=["sweeps"],
        summary="Stop a sweep job; its rows so far and its tables are kept",
        responses=openapi.sweep_responses(202),
        status_code=202,
    )
    async def sweep_cancel(request: Request, job: str) -> Response:
        no_query(request)
        found = jobs.get(job)
        jobs.cancel(found)
        return JSONResponse(jobs.status(found), status_code=202)

    @app.delete(
        f"{API}/sweep/{{job}}",
        tags=["sweeps"],
        summary="Stop a sweep job and delete it with its files",
        responses=openapi.sweep_responses(200),
    )
    async def sweep_delete(request: Request, job: str) -> Response:
        no_query(request)
        found = jobs.get(job)
        jobs.delete(found)
        return JSONResponse({**jobs.status(found), "deleted": True})

    for name, media in FILES.items():

        def make_file(name: str = name, media: str = media) -> Any:
            async def endpoint(request: Request, job: str) -> Response:
                no_query(request)
                found = jobs.get(job)
                data = await asyncio.to_thread(jobs.file, found, name)
                stem = re.sub(r"[^A-Za-z0-9._-]+", "-", found.sweep.name).strip("-.")[:60] or "sweep"
                headers = {"Content-Disposition": f'inline; filename="{stem}-{name}"'}
                if name == "summary.html":
                    headers["Content-Security-Policy"] = SUMMARY_CSP
                return Response(data, media_type=media, headers=headers)

            return endpoint

        app.get(
            f"{API}/sweep/{{job}}/{name}",
            tags=["sweeps"],
            summary=openapi.SWEEP_FILES[name],
            responses=openapi.sweep_file_responses(media),
            response_class=Response,
        )(make_file())

    def no_query(request: Request) -> None:
        if request.query_params:
            raise Failure(400, "bad-request", f"{request.url.path} takes no query parameters")

    async def get_op(request: Request, op: str, **extra: Any) -> Response:
        if request.query_params:
            raise Failure(400, "bad-request", f"{request.url.path} takes no query parameters")
        return _reply(await forward(request, {"op": op, **extra}))

    @app.get(
        f"{API}/rulebase",
        tags=["rulebase"],
        summary="The rulebase the server runs: rule count, sha256, version",
        responses=openapi.ERRORS,
    )
    async def rulebase(request: Request) -> Response:
        if request.query_params:
            raise Failure(400, "bad-request", f"{request.url.path} takes no query parameters")
        info = pool.info
        return JSONResponse({k: info[k] for k in ("gpusizer", "rules", "sha256", "overlays", "signing")})

    @app.get(
        f"{API}/catalogs",
        tags=["rulebase"],
        summary="The knowledge catalogs: their fields and item counts",
        responses=openapi.ERRORS,
    )
    async def catalogs(request: Request) -> Response:
        return await get_op(request, "catalogs")

    @app.get(
        f"{API}/catalogs/{{name}}",
        tags=["rulebase"],
        summary="One catalog's items (for the form's pickers)",
        responses=openapi.FOUND_ERRORS,
    )
    async def catalog(request: Request, name: str) -> Response:
        return await get_op(request, "catalog", name=name)

    @app.get(
        f"{API}/workload-schema", tags=["rulebase"], summary="The workload's JSON Schema", responses=openapi.ERRORS
    )
    async def schema(request: Request) -> Response:
        return await get_op(request, "schema")

    @app.get(API, tags=["rulebase"], summary="What this API offers")
    async def index() -> dict[str, Any]:
        return {
            "gpusizer": __version__,
            "api": "v1",
            "operations": {op: f"POST {API}/{op}" for op in openapi.OPERATIONS},
            "sweeps": {
                "start": f"POST {API}/sweep",
                "list": f"GET {API}/sweep",
                "poll": f"GET {API}/sweep/{{job}}",
                "files": [f"GET {API}/sweep/{{job}}/{name}" for name in FILES],
                "cancel": f"POST {API}/sweep/{{job}}/cancel",
                "delete": f"DELETE {API}/sweep/{{job}}",
            },
            "reads": {k: f"GET {API}/{k}" for k in ("rulebase", "catalogs", "catalogs/{name}", "workload-schema")},
            "openapi": f"{API}/openapi.json",
            "docs": f"{API}/docs",
        }

    @app.get(f"{API}/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        from .page import docs_page

        return HTMLResponse(docs_page(app.openapi()))

    # -- the page ------------------------------------------------------------------------------------
    @app.get("/", include_in_schema=False)
    async def home(request: Request) -> Response:
        unknown = set(request.query_params) - {"w"}
        if unknown:
            raise Failure(
                400, "bad-request", f"unknown query parameter {sorted(unknown)[0]!r}", help="a link has only ?w=..."
            )
        reply = await forward(request, {"op": "ui-page", "link": request.query_params.get("w", "")})
        return _reply(reply)

    for name in ("result", "derivation", "edit", "candidates"):

        def make_ui(op: str = f"ui-{name}") -> Any:
            async def endpoint(request: Request) -> Response:
                return await operation(request, op)

            return endpoint

        app.post(f"/ui/{name}", include_in_schema=False)(make_ui())

    @app.get("/ui/download/{kind}", include_in_schema=False)
    async def download(request: Request, kind: str) -> Response:
        reply = await forward(request, {"op": "ui-download", "kind": kind, "link": request.query_params.get("w", "")})
        filename = reply.get("headers", {}).pop("X-Filename", None) if reply["status"] == 200 else None
        return _reply(reply, filename)

    @app.get("/static/{name}", include_in_schema=False)
    async def static(name: str) -> Response:
        from .page import static_file

        found = static_file(name)
        if found is None:
            raise Failure(404, "not-found", f"no such file: /static/{name}")
        suffix = name[name.rfind(".") :]
        return Response(
            found,
            media_type=STATIC_TYPES.get(suffix, "application/octet-stream"),
            headers={"Cache-Control": "max-age=3600"},
        )

    @app.get("/login", include_in_schema=False)
    async def login_page(request: Request) -> HTMLResponse:
        from .page import login_page as render_login

        return HTMLResponse(render_login(request.query_params.get("next", "/"), failed=False))

    @app.post("/login", include_in_schema=False)
    async def login(request: Request) -> Response:
        from .page import login_page as render_login

        body = (await request.body())[:4096].decode("utf-8", "replace")
        form = parse_form(body)
        target = form.get("next", "/")
        if not target.startswith("/") or target.startswith("//"):
            target = "/"
        if options.token is not None and hmac.compare_digest(
            form.get("token", "").strip().encode(), options.token.encode()
        ):
            response = RedirectResponse(target, status_code=303)
            response.set_cookie(
                COOKIE, options.token, httponly=True, samesite="strict", secure=request.url.scheme == "https"
            )
            return response
        return HTMLResponse(render_login(target, failed=True), status_code=401)

    return app


def _public(path: str) -> bool:
    """What needs no token: health checks, the static files, the login page."""
    return path in ("/healthz", "/readyz", "/login") or path.startswith("/static/")


def _authorized(request: Request, token: str, path: str) -> bool:
    auth = request.headers.get("authorization", "")
    if auth[:7].lower() == "bearer " and hmac.compare_digest(auth[7:].strip().encode(), token.encode()):
        return True
    if not path.startswith("/api/"):  # the page: the cookie set by /login (SameSite=Strict)
        cookie = request.cookies.get(COOKIE, "")
        return bool(cookie) and hmac.compare_digest(cookie.encode(), token.encode())
    return False


def _too_large(size: int, limit: int) -> Failure:
    return Failure(
        413,
        "too-large",
        f"the request body is {size:,} bytes or more; this server reads at most {limit:,}",
        help="send a smaller workload (a workload file may be 1 MB), "
        "or start the server with a larger --max-request-mb",
    )


__all__ = ["API", "Options", "create_app", "error_body", "is_loopback"]
