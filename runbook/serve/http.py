"""The HTTP API (FastAPI; OpenAPI schema at /openapi.json, docs at /docs), a thin shell over MemoryService.

    POST /query                          {"question", "budget": 8000 | "8k", "method": "r", "image_base64"?}
    POST /trajectories                   a whole trajectory (the JSONL schema), or {"id", "stream": true, "goal",
                                         "site", ..., "visible": "close" | "step"} to open one an agent streams
    POST /trajectories/{id}/states       the next step of an open trajectory
    POST /trajectories/{id}/close        {"outcome"?}: insert it; queries see it from now on
    GET  /trajectories/{id}              a trajectory's row and states (or an open one's progress)
    GET  /trajectories/{id}/states/{i}   one state: header, page text, provenance
    GET  /stats                          the store's figures

Bad input gets a 4xx whose `error` names the field; nothing is written. With an API key every request must carry
`Authorization: Bearer KEY` (or `X-API-Key: KEY`).
"""

from __future__ import annotations

import hmac
import json
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, StrictInt, StrictStr

from ..budget import parse_budget
from ..errors import (
    BudgetError,
    ConflictError,
    InputError,
    QueryError,
    RunbookError,
    StoreChanging,
    UnsafeStoreFile,
)
from .body_limit import BodyLimit
from .images import image_file
from .service import BusyError, MemoryService, NotFound

MAX_BODY_BYTES = 20 * 1024 * 1024
"""A request body larger than this is refused before it is read whole (413)."""


STATUS = [
    (NotFound, 404),
    (UnsafeStoreFile, 403),  # a link or FIFO planted in the store: refused, not read (and not a server fault)
    (ConflictError, 409),
    (BusyError, 503),
    (StoreChanging, 503),  # a trajectory replaced again and again while it was read: retry
    (InputError, 400),
    (QueryError, 400),
    (BudgetError, 400),
]


class QueryBody(BaseModel):
    question: str = Field(description="What the agent wants to know")
    # strict: JSON's true is no budget (lax validation read it as 1 token)
    budget: StrictInt | StrictStr = Field("8k", description="Tokens of context: 8000, '8k', '1.5k'")
    method: str = Field("r", description="r (pools, fast), auto (r, then c when weak), c (coding agent), bm25")
    image_base64: str | None = Field(None, description="An image that belongs to the question (PNG/JPEG, base64)")


class CloseBody(BaseModel):
    outcome: str | None = Field(None, description="How the run ended, e.g. 'success (reward 1.0)'")


def create_app(service: MemoryService, *, api_key: str | None = None, max_body_bytes: int = MAX_BODY_BYTES) -> FastAPI:
    app = FastAPI(
        title="runbook",
        description="A long-term memory for web agents: cited, token-budgeted evidence from past trajectories.",
        version="0.1.0",
    )

    @app.middleware("http")
    async def guard(request: Request, call_next):
        if api_key is not None:
            given = request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix("Bearer ")
            if not hmac.compare_digest(given.encode(), api_key.encode()):
                return _error(401, "a valid API key is required (Authorization: Bearer KEY or X-API-Key: KEY)")
        return await call_next(request)

    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)  # outermost: counts the body as it arrives

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError):
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "body"
        if first.get("type") == "json_invalid":
            return _error(400, f"malformed JSON: {first.get('msg', '')}", field="body")
        return _error(400, f"field {where!r}: {first.get('msg', 'invalid')}", field=where)

    @app.exception_handler(RunbookError)
    async def refused(_request: Request, exc: RunbookError):
        status = next((code for kind, code in STATUS if isinstance(exc, kind)), 500)
        return _error(status, str(exc), field=getattr(exc, "field", None))

    @app.post("/query", summary="Evidence for a question, cut to the budget, every item citing its source")
    def query(body: QueryBody) -> dict:
        try:
            budget = parse_budget(body.budget) if isinstance(body.budget, str) else body.budget
        except BudgetError as exc:
            raise InputError(str(exc), field="budget") from exc
        if budget < 1:
            raise InputError("must be at least 1 token", field="budget")
        with image_file(body.image_base64) as image:
            return service.query(body.question, budget=budget, method=body.method, image=image)

    @app.post("/trajectories", status_code=201, summary="Insert a trajectory, or open one to stream its steps")
    async def post_trajectory(request: Request) -> dict:
        obj = await _json_object(request)
        if obj.pop("stream", False):
            tid = obj.pop("id", None) or obj.pop("trajectory_id", None)
            if not isinstance(tid, str):
                raise InputError("is missing: a streamed trajectory needs an id", field="id")
            _check_addressable(tid)
            obj.pop("states", None)
            return service.open_trajectory(tid, **obj)
        return service.insert(obj)

    @app.post("/trajectories/{trajectory_id}/states", status_code=201, summary="Append a step to an open trajectory")
    async def post_state(trajectory_id: str, request: Request) -> dict:
        return service.append_state(trajectory_id, await _json_object(request))

    @app.post("/trajectories/{trajectory_id}/close", summary="Insert an open trajectory: queries see it from now on")
    def close(trajectory_id: str, body: CloseBody | None = None) -> dict:
        return service.close_trajectory(trajectory_id, outcome=body.outcome if body else None)

    @app.get("/trajectories/{trajectory_id}", summary="A trajectory's row and states")
    def get_trajectory(trajectory_id: str) -> dict:
        return service.trajectory(trajectory_id)

    @app.get("/trajectories/{trajectory_id}/states/{index}", summary="One state with its provenance")
    def get_state(trajectory_id: str, index: int) -> dict:
        return service.state(trajectory_id, index)

    @app.get("/stats", summary="The store's figures")
    def stats() -> dict:
        return service.stats()

    return app


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


async def _json_object(request: Request) -> dict[str, Any]:
    raw = await request.body()  # at most the limit: BodyLimit answers 413 past it
    try:
        obj = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"malformed JSON: {exc}", field="body") from exc
    if not isinstance(obj, dict):
        raise InputError(f"must be a JSON object, got {type(obj).__name__}", field="body")
    return obj
