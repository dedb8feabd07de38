"""The HTTP API (FastAPI), a thin shell over MemoryService. Its schema (/openapi.json) and docs (/docs: Swagger UI,
/redoc: ReDoc, both served from the package, no CDN) are public; everything else needs the API key when one is set.

    POST /query                          {"question", "budget": 8000 | "8k", "method": "auto", "image_base64"?}
    POST /trajectories                   a whole trajectory (the JSONL schema), or {"id", "stream": true, "goal",
                                         "site", ..., "visible": "close" | "step"} to open one an agent streams
    POST /trajectories/{id}/states       the next step of an open trajectory (runbook's, AgentLab's or
                                         browser-use's shape)
    POST /trajectories/{id}/close        {"outcome"?}: insert it; queries see it from now on
    GET  /trajectories/{id}              a trajectory's row and states (or an open one's progress)
    GET  /trajectories/{id}/states/{i}   one state: header, page text, provenance
    GET  /trajectories/{id}/states/{i}/screenshot   its screenshot
    GET  /stats                          the store's figures

Bad input gets a 4xx `{"error", "field"}` naming the field; nothing is written. With an API key every request
but the docs must carry `Authorization: Bearer KEY` (or `X-API-Key: KEY`).
"""

from __future__ import annotations

import hmac
import logging
import time
from typing import Annotated, Any

from fastapi import Body, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response
from fastapi_offline import FastAPIOffline
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import (
    BudgetError,
    ConflictError,
    InputError,
    QueryError,
    RunbookError,
    StoreChanging,
    UnsafeStoreFile,
)
from ..version import __version__
from .body_limit import BodyLimit
from .images import image_file
from .models import (
    CloseRequest,
    ErrorBody,
    InsertResult,
    OpenResult,
    QueryRequest,
    QueryResult,
    Step,
    StepResult,
    TrajectoryRequest,
)
from .service import BusyError, Gone, MemoryService, NotFound

MAX_BODY_BYTES = 20 * 1024 * 1024
"""A request body larger than this is refused before it is read whole (413)."""
PUBLIC = ("/openapi.json", "/docs", "/redoc", "/static-offline-docs/", "/docs/oauth2-redirect")
"""Paths served without the API key: the schema and its documentation."""
access_log = logging.getLogger("runbook.access")


STATUS = [
    (Gone, 410),
    (NotFound, 404),
    (UnsafeStoreFile, 403),  # a link or FIFO planted in the store: refused, not read (and not a server fault)
    (ConflictError, 409),
    (BusyError, 503),
    (StoreChanging, 503),  # a trajectory replaced again and again while it was read: retry
    (InputError, 400),
    (QueryError, 400),
    (BudgetError, 400),
]


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    meaning = {
        400: "Bad input: the error names the field; nothing was written",
        401: "A valid API key is required",
        403: "A store file is a link, a FIFO or outside the store: refused, not read",
        404: "No such trajectory, open trajectory or state",
        409: "Another trajectory is stored under this id",
        410: "The open trajectory went without a step past the age limit and was discarded",
        413: "The body is over the size limit",
        503: "The writer or every sandbox stayed busy, or the trajectory kept being replaced while read: retry later",
    }
    return {code: {"model": ErrorBody, "description": meaning[code]} for code in codes}


def create_app(service: MemoryService, *, api_key: str | None = None, max_body_bytes: int = MAX_BODY_BYTES) -> FastAPI:
    app = FastAPIOffline(
        title="runbook",
        description=(
            "A long-term memory for web agents: cited, token-budgeted evidence from past trajectories, and the agent's "
            'own steps streamed in as it works. Every refused request is a 4xx `{"error", "field"}`.'
        ),
        version=__version__,
    )

    @app.middleware("http")
    async def guard(request: Request, call_next):
        start = time.perf_counter()
        response = await _guarded(request, call_next)
        access_log.info(
            '%s "%s %s" %d %.0f ms',
            request.client.host if request.client else "-",
            request.method,
            request.url.path,
            response.status_code,
            (time.perf_counter() - start) * 1000,
        )
        return response

    async def _guarded(request: Request, call_next):
        if api_key is not None and not request.url.path.startswith(PUBLIC):
            given = request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix("Bearer ")
            if not hmac.compare_digest(given.encode(), api_key.encode()):
                return _error(401, "a valid API key is required (Authorization: Bearer KEY or X-API-Key: KEY)")
        return await call_next(request)

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError):
        first = exc.errors()[0] if exc.errors() else {}
        if first.get("type") == "json_invalid":
            return _error(
                400, f"malformed JSON: {first.get('ctx', {}).get('error', first.get('msg', ''))}", field="body"
            )
        where = _field(first.get("loc", ()))
        if first.get("type") == "missing" and where == "body":
            return _error(400, "the body is missing: send a JSON object", field="body")
        if first.get("type") == "extra_forbidden":
            return _error(400, f"unknown field {where!r}: see /docs for the fields this takes", field=where)
        if first.get("type") in ("model_attributes_type", "dict_type") and where == "body":
            return _error(400, "must be a JSON object", field="body")
        return _error(400, f"field {where!r}: {first.get('msg', 'invalid')}", field=where)

    @app.exception_handler(RunbookError)
    async def refused(_request: Request, exc: RunbookError):
        status = next((code for kind, code in STATUS if isinstance(exc, kind)), 500)
        return _error(status, str(exc), field=getattr(exc, "field", None))

    @app.post(
        "/query",
        response_model=QueryResult,
        responses=_errors(400, 401, 413, 503),
        summary="Evidence for a question, cut to the budget, every item citing its source",
    )
    def query(body: QueryRequest) -> dict:
        with image_file(body.image_base64) as image:
            return service.query(body.question, budget=body.budget, method=body.method, image=image)

    @app.post(
        "/trajectories",
        status_code=201,
        response_model_exclude_none=True,
        response_model=InsertResult | OpenResult,
        responses=_errors(400, 401, 409, 413, 503),
        summary="Insert a whole trajectory, or open one to stream its steps",
    )
    def post_trajectory(body: TrajectoryRequest) -> dict:
        if body.stream:
            if body.states:
                raise InputError("a streamed trajectory starts with no states: append them one by one", field="states")
            _check_addressable(body.id)
            fields = body.model_dump(exclude={"id", "stream", "visible", "states"}, exclude_none=True)
            return service.open_trajectory(body.id, visible=body.visible, **fields)
        if body.states is None:
            raise InputError('is missing: send the states, or "stream": true to open the trajectory', field="states")
        return service.insert(body.model_dump(exclude={"stream", "visible"}, exclude_unset=True))

    @app.post(
        "/trajectories/{trajectory_id}/states",
        status_code=201,
        response_model_exclude_none=True,
        response_model=StepResult,
        responses=_errors(400, 401, 404, 410, 413, 503),
        summary="Append a step to an open trajectory",
    )
    def post_state(trajectory_id: str, body: Annotated[Step, Body()]) -> dict:
        return service.append_state(trajectory_id, body.model_dump(exclude_none=True))

    @app.post(
        "/trajectories/{trajectory_id}/close",
        response_model_exclude_none=True,
        response_model=InsertResult,
        responses=_errors(400, 401, 404, 410, 413, 503),
        summary="Insert an open trajectory: queries see it from now on",
    )
    def close(trajectory_id: str, body: CloseRequest | None = None) -> dict:
        return service.close_trajectory(trajectory_id, outcome=body.outcome if body else None)

    @app.get(
        "/trajectories/{trajectory_id}", responses=_errors(401, 403, 404, 503), summary="A trajectory's row and states"
    )
    def get_trajectory(trajectory_id: str) -> dict:
        return service.trajectory(trajectory_id)

    @app.get(
        "/trajectories/{trajectory_id}/states/{index}",
        responses=_errors(401, 403, 404, 503),
        summary="One state with its provenance",
    )
    def get_state(trajectory_id: str, index: int) -> dict:
        return service.state(trajectory_id, index)

    @app.get(
        "/trajectories/{trajectory_id}/states/{index}/screenshot",
        response_class=Response,
        responses={200: {"content": {"image/png": {}, "image/jpeg": {}}}, **_errors(401, 403, 404, 503)},
        summary="A state's screenshot",
    )
    def get_screenshot(trajectory_id: str, index: int) -> Response:
        data, media_type = service.screenshot(trajectory_id, index)
        return Response(data, media_type=media_type)

    @app.get("/stats", responses=_errors(401), summary="The store's figures")
    def stats() -> dict:
        return service.stats()

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException):
        return _error(exc.status_code, str(exc.detail))

    app.openapi = lambda: _schema(app)  # type: ignore[method-assign]
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)  # outermost: counts the body as it arrives
    return app


def _schema(app: FastAPI) -> dict[str, Any]:
    """The OpenAPI schema without FastAPI's 422 (this API answers bad input with a 400 and ErrorBody)."""
    if app.openapi_schema is None:
        schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        for path in schema.get("paths", {}).values():
            for operation in path.values():
                operation.get("responses", {}).pop("422", None)
        for name in ("HTTPValidationError", "ValidationError"):
            schema.get("components", {}).get("schemas", {}).pop(name, None)
        app.openapi_schema = schema
    return app.openapi_schema


def _field(loc: Any) -> str:
    """'states[0].url' from pydantic's ('body', 'states', 0, 'url'); a step's shape tag is left out."""
    out = ""
    for part in loc:
        if part in ("body", "runbook", "agentlab", "browser_use") and not out:
            continue
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "body"


def _check_addressable(trajectory_id: str) -> None:
    """A streamed trajectory is closed at /trajectories/{id}/close: an id that no URL path can carry (a '/',
    '.' or '..', which clients resolve away) could be opened but never closed."""
    if "/" in trajectory_id or trajectory_id in (".", ".."):
        raise InputError(
            f"{trajectory_id!r} cannot be part of a URL path (no '/', and not '.' or '..'): a streamed trajectory "
            "is closed at /trajectories/{id}/close, so choose another id",
            field="id",
        )


def _error(status: int, message: str, *, field: str | None = None) -> JSONResponse:
    return JSONResponse({"error": message, **({"field": field} if field else {})}, status_code=status)
