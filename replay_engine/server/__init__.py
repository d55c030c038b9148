"""The HTTP server: dialects and control routes composed into one app, and its runner.

``app`` composes the wire dialects (``replay_engine.wire``), the catalog and the control
routes (``control``) into ``create_app``; ``model_calls`` is the model-call endpoint each
dialect gets, ``preamble`` the session / retry rules every model route shares,
``request_body`` the body reader, ``calls`` the ASGI answers serving one bound call, and
``runner`` the embedded uvicorn runner (``ReplayServer``, ``serve_scenario``).
"""

from __future__ import annotations

from .app import create_app, set_app_scenario
from .guard import is_loopback
from .request_body import MAX_BODY_BYTES
from .runner import ReplayServer, serve_scenario
from .served import DEFAULT_PROVIDERS, Overflowed, OverflowHandler, ScenarioSource

__all__ = [
    "DEFAULT_PROVIDERS",
    "MAX_BODY_BYTES",
    "Overflowed",
    "OverflowHandler",
    "ReplayServer",
    "ScenarioSource",
    "create_app",
    "is_loopback",
    "serve_scenario",
    "set_app_scenario",
]
