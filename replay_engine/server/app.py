"""The ASGI app a connected agent talks to (docs/format.md#wire): dialects and control routes composed.

``create_app`` builds the Starlette app over a ``ReplayEngine``: each dialect's model routes,
the provider catalog and the control routes, every one also under ``/runs/{run}/`` with its
own bindings, the model routes also under ``/sessions/{id}/``. Whoever reloads the engine
itself tells the app with ``set_app_scenario`` so ``/replay/v1/scripts`` follows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..engine import ReplayEngine
from ..models import ProviderConfig
from ..safe_text import shown
from ..wire.anthropic import MessagesDialect
from ..wire.dialect import Dialect, WireOptions
from ..wire.gemini import GeminiDialect
from ..wire.native import NativeDialect
from ..wire.openai_chat import ChatDialect
from ..wire.responses import ResponsesDialect
from .control import Catalog, Control, Endpoint
from .model_calls import ModelCall
from .preamble import bare_path
from .served import ReloadSource, ScenarioSource, Served


def default_dialects(options: WireOptions | None = None) -> list[Dialect]:
    """The dialects every app serves, set as ``options`` say."""
    options = options or WireOptions()
    return [ChatDialect(error_finish=options.chat_error_finish), MessagesDialect(),
            ResponsesDialect(reasoning=options.responses_reasoning), GeminiDialect(),
            NativeDialect()]


def _error_handler(status: int, code: str, dialects: Sequence[Dialect]
                   ) -> Callable[[Request, Exception], Any]:
    """404 / 405 / 500 as JSON, in the error shape of the dialect the path belongs to (the
    path and method quoted capped: a 60 KB path gets no 60 KB answer)."""
    fallback = ChatDialect()

    async def handle(request: Request, exc: Exception) -> Response:
        headers = dict(exc.headers or {}) if isinstance(exc, HTTPException) else {}
        allow = {k.lower(): v for k, v in headers.items()}.get("allow")
        path = request.url.path
        where, method = shown(path), shown(request.method)
        if status == 404:
            message = f"no route {where}; see GET /replay/v1/scripts for what is served"
        elif status == 405:
            message = f"{method} is not allowed on {where}" + (f"; use {allow}" if allow else "")
        else:
            message = f"internal error while answering {method} {where}"
        bare = bare_path(path)
        dialect = next((d for d in dialects if d.owns(bare)), fallback)
        body = dialect.error_body(message, code, status)
        return JSONResponse(body, status_code=status, headers=headers)

    return handle


def create_app(
    engine: ReplayEngine,
    *,
    scenario: ScenarioSource = None,
    providers: list[ProviderConfig] | None = None,
    reload: ReloadSource | None = None,
    sdk_retries: bool = False,
    dialects: Sequence[Dialect] | None = None,
    wire: WireOptions | None = None,
) -> Starlette:
    """The ASGI app serving ``engine``: every docs/format.md#wire route, bare (run ``default``) and per run.

    The model routes also exist under ``/sessions/{id}/`` (after any run prefix), for
    clients that can set a base URL but no header. ``scenario`` may be a callable
    returning the current scenario; ``set_app_scenario`` changes it later.
    ``sdk_retries`` leaves ``x-should-retry: false`` off the model routes' error answers.
    ``dialects`` replaces the default set of wire dialects; ``wire`` sets the default ones
    (``--chat-error-finish``, ``--responses-reasoning``).
    """
    served = Served(engine, scenario, providers, reload, sdk_retries, wire)
    wires = list(dialects) if dialects is not None else default_dialects(served.wire)
    model_routes: list[tuple[str, Endpoint, list[str]]] = [
        (path, ModelCall(served, dialect, path).endpoint, ["POST"])
        for dialect in wires for path in dialect.routes]
    model_routes += Catalog(served).table()
    routes = []
    control = Control(served)
    for path, endpoint, methods in [*model_routes, *control.table()]:
        routes.append(Route(path, endpoint, methods=methods))
        routes.append(Route("/runs/{run}" + path, endpoint, methods=methods))
    routes.append(Route("/runs/{run}", control.delete_run, methods=["DELETE"]))
    for path, endpoint, methods in model_routes:
        routes.append(Route("/sessions/{session}" + path, endpoint, methods=methods))
        routes.append(Route("/runs/{run}/sessions/{session}" + path, endpoint, methods=methods))
    app = Starlette(routes=routes, exception_handlers={
        404: _error_handler(404, "NOT_FOUND", wires),
        405: _error_handler(405, "METHOD_NOT_ALLOWED", wires),
        500: _error_handler(500, "INTERNAL", wires),
    })
    app.state.replay_served = served
    return app


def served_by(app: Starlette) -> Served:
    """The serving context of an app made by ``create_app`` (TypeError for any other app)."""
    served = getattr(app.state, "replay_served", None)
    if not isinstance(served, Served):
        raise TypeError("this needs an app made by create_app")
    return served


def set_app_scenario(app: Starlette, scenario: ScenarioSource) -> None:
    """Tell an app made by ``create_app`` which scenario it serves now (after a reload)."""
    served_by(app).set_scenario(scenario)

