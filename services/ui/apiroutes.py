"""The URL API's routes for app.py, loaded on first use: the server's start (and its health check) must not
import the database layer, so each route imports services/ui/api.py only when a request arrives."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

PATHS = ("stats.json", "trials.json", "trials.csv", "trial/{nct_id}.json", "sql.json", "openapi.json")
PREFIX = "/api/v1"  # services/dashboard/api.py VERSION (a test checks they agree)


def _lazy(index: int) -> Route:
    async def endpoint(request: Request) -> Response:
        from services.ui import api  # the dashboard and data layers, on the first API request

        return await api.ROUTES[index].endpoint(request)  # type: ignore[no-any-return, misc]

    return Route(f"{PREFIX}/{PATHS[index]}", endpoint, methods=["GET"])


def routes() -> list[Route]:
    """The API's routes, each importing its handler on first use."""
    return [_lazy(i) for i in range(len(PATHS))]
