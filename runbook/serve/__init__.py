"""runbook for agents at work: an HTTP API (and its service layer) over one store.

    from runbook.serve import MemoryService, create_app
    app = create_app(MemoryService(".runbook"))        # a FastAPI app: uvicorn.run(app)

The `serve` extra installs FastAPI and uvicorn: pip install 'runbook[serve]'.
"""

from .service import BusyError, MemoryService, NotFound

__all__ = ["MemoryService", "BusyError", "NotFound", "create_app"]


def create_app(service: MemoryService, **options):
    """The HTTP API's FastAPI app over `service` (imported here so the service needs no FastAPI)."""
    from .http import create_app as make

    return make(service, **options)
