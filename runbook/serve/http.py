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
but the docs must carry `Authorization: Bearer KEY` (or `X-API-Key: KEY`); a request whose Host or Origin is not
this server's is refused (serve/guard.py).
"""

from __future__ import annotations

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
from .errors import invalid_input
from .guard import AccessLog, Admission, Guard
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

ERRORS: dict[int, tuple[str, str, str | None]] = {
    400: ("Bad input: the error names the field; nothing was written", "field 'budget': must be positive", "budget"),
    401: (
        "A valid API key is required (the reply carries WWW-Authenticate: Bearer)",
        "a valid API key is required (Authorization: Bearer KEY or X-API-Key: KEY)",
        "Authorization",
    ),
    403: (
        "A store file is a link, a FIFO or outside the store, or the request's Origin is another site: refused",
        "store file trajectories/run-1/states/0001.md is a symbolic link: not read",
        None,
    ),
    404: ("No such trajectory, open trajectory or state", "no trajectory 'run-7' in the store", None),
    409: (
        "Another trajectory is stored under this id",
        "trajectory 'run-7' is already stored with different content: ... send this one under a new id",
        "id",
    ),
    410: (
        "The open trajectory went without a step past the age limit and was discarded",
        "open trajectory 'run-7' had no step since 2025-12-18T22:17:41Z (more than 24 h) and was discarded: ...",
        None,
    ),
    413: ("The body is over the size limit", "the body is over 20,971,520 bytes", None),
    421: (
        "The request's Host is not a name of this server (DNS rebinding)",
        "Host 'evil.example:8765' is not a name of this server (127.0.0.1:8765, localhost:8765): ...",
        "Host",
    ),
    503: (
        "The writer or every sandbox stayed busy, the open trajectories are at their limit, or the trajectory kept "
        "being replaced while read: retry later",
        "every sandbox stayed busy for 60 s: retry later, or use method 'r', which needs none",
        None,
    ),
}
"""Per status: what it means, and an example of its body (error, field)."""


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The documented error responses of a route, each with its own example."""
    out: dict[int | str, dict[str, Any]] = {}
    for code in (*codes, 421):
        meaning, error, field = ERRORS[code]
        example = {"error": error, **({"field": field} if field else {})}
        out[code] = {"model": ErrorBody, "description": meaning, "content": {"application/json": {"example": example}}}
    return out


def create_app(
    service: MemoryService,
    *,
    api_key: str | None = None,
    admission: Admission | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> FastAPI:
    """The API over `service`. `admission`: the Host, Origin and API key it accepts (default: a loopback server's
    names on any port, and `api_key`)."""
    app = FastAPIOffline(
        title="runbook",
        description=(
            "A long-term memory for web agents: cited, token-budgeted evidence from past trajectories, and the agent's "
            'own steps streamed in as it works. Every refused request is a 4xx `{"error", "field"}`.'
        ),
        version=__version__,
    )
    _query_routes(app, service)
    _write_routes(app, service)
    _read_routes(app, service)
    _error_handlers(app)
    app.openapi = lambda: _schema(app)  # type: ignore[method-assign]
    admission = admission or Admission.loopback(api_key=api_key, public=PUBLIC)
    app.add_middleware(Guard, admission=admission)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)  # counts the body as it arrives
    app.add_middleware(AccessLog)  # outermost: every request, refused or not
    return app


def _query_routes(app: FastAPI, service: MemoryService) -> None:
    @app.post(
        "/query",
        response_model=QueryResult,
        responses=_errors(400, 401, 413, 503),
        summary="Evidence for a question, cut to the budget, every item citing its source",
    )
    def query(body: QueryRequest) -> dict:
        with image_file(body.image_base64) as image:
            return service.query(body.question, budget=body.budget, method=body.method, image=image)


def _write_routes(app: FastAPI, service: MemoryService) -> None:
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
        responses=_errors(400, 401, 404, 409, 410, 413, 503),
        summary="Insert an open trajectory: queries see it from now on",
    )
    def close(trajectory_id: str, body: CloseRequest | None = None) -> dict:
        return service.close_trajectory(trajectory_id, outcome=body.outcome if body else None)


def _read_routes(app: FastAPI, service: MemoryService) -> None:
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


def _error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError):
        error = invalid_input(exc.errors(), skip=("body", "path", "query"))
        return _error(400, str(error), field=error.field)

    @app.exception_handler(RunbookError)
    async def refused(_request: Request, exc: RunbookError):
        status = next((code for kind, code in STATUS if isinstance(exc, kind)), 500)
        return _error(status, str(exc), field=getattr(exc, "field", None))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException):
        return _error(exc.status_code, str(exc.detail))


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
