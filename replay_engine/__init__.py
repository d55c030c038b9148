"""dsh-replay's core: load recorded agent sessions, derive scripts, and replay them exactly.

This package never imports the TUI; everything here works headless. ``__all__`` is the public
API (the debugger in ``app/`` uses nothing else); the HTTP server and the demo agent load on
first use, so importing the package stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .authoring import EntryComparison, EntryTextError, OverrideDraft, SavedSidecar, parse_entry_text
from .authoring_unfinished import open_draft
from .config import load_serve_config
from .derive import derive_replay_script, js_string, load_log
from .engine import (
    DEFAULT_RUN,
    BindingState,
    CallHandle,
    CallRecord,
    Pace,
    ReplayEngine,
    RunState,
    diff_scripts,
    events,
)
from .errors import (
    UNFINISHED_CALL,
    AbortedError,
    BindingError,
    ConfigError,
    DerivationError,
    InputError,
    LogParseError,
    NotConsumedError,
    PlaceholderError,
    ReplayError,
    ScenarioNotFoundError,
    ScriptedFailure,
    ScriptExhaustedError,
    SidecarError,
    UnrecordedSessionError,
)
from .files import Rename, atomic_write, fingerprint
from .logs import parse_session_header, parse_session_log
from .models import (
    AnyEntry,
    ChunksEntry,
    HangEntry,
    ModelConfig,
    OverrideDocument,
    OverridePatch,
    ProviderConfig,
    ReplayConfig,
    ReplayEntry,
    ScriptEntry,
    SessionHeader,
    SessionScript,
    ThrowEntry,
    entry_to_json,
)
from .placeholders import resolve_scripted_entry
from .presentation import (
    EXIT_FAILED,
    EXIT_NOT_CONSUMED,
    EXIT_OK,
    EXIT_USAGE,
    summarize_entry,
    verdict,
    verdict_text,
)
from .scenario import (
    CHILD_RE,
    PRIMARY_NAME,
    Scenario,
    load_replay_script,
    load_scenario,
    load_scenario_config,
    load_session_scripts,
)
from .sidecar import SIDECAR_NAME, Sidecar, load_sidecar, parse_sidecar_text, validate_entry, validate_sidecar

if TYPE_CHECKING:
    from .demo_agent import run_demo_agent
    from .server import ReplayServer, is_loopback

_LAZY = {"ReplayServer": "server", "is_loopback": "server", "run_demo_agent": "demo_agent"}
"""Public names whose modules are imported on first access (uvicorn, starlette, httpx)."""


def __getattr__(name: str) -> Any:
    """Import the server and the demo agent only when a caller asks for them."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "UNFINISHED_CALL",
    "CHILD_RE",
    "DEFAULT_RUN",
    "EXIT_FAILED",
    "EXIT_NOT_CONSUMED",
    "EXIT_OK",
    "EXIT_USAGE",
    "PRIMARY_NAME",
    "SIDECAR_NAME",
    "AbortedError",
    "AnyEntry",
    "BindingError",
    "BindingState",
    "CallHandle",
    "CallRecord",
    "ChunksEntry",
    "ConfigError",
    "DerivationError",
    "EntryComparison",
    "EntryTextError",
    "HangEntry",
    "InputError",
    "LogParseError",
    "ModelConfig",
    "NotConsumedError",
    "OverrideDocument",
    "OverrideDraft",
    "OverridePatch",
    "Pace",
    "PlaceholderError",
    "ProviderConfig",
    "Rename",
    "ReplayConfig",
    "ReplayEngine",
    "ReplayEntry",
    "ReplayError",
    "ReplayServer",
    "RunState",
    "SavedSidecar",
    "Scenario",
    "ScenarioNotFoundError",
    "ScriptEntry",
    "ScriptExhaustedError",
    "ScriptedFailure",
    "SessionHeader",
    "SessionScript",
    "Sidecar",
    "SidecarError",
    "ThrowEntry",
    "UnrecordedSessionError",
    "atomic_write",
    "derive_replay_script",
    "diff_scripts",
    "entry_to_json",
    "events",
    "fingerprint",
    "is_loopback",
    "js_string",
    "load_log",
    "load_replay_script",
    "load_scenario",
    "load_scenario_config",
    "load_serve_config",
    "load_session_scripts",
    "load_sidecar",
    "open_draft",
    "parse_entry_text",
    "parse_session_header",
    "parse_session_log",
    "parse_sidecar_text",
    "resolve_scripted_entry",
    "run_demo_agent",
    "summarize_entry",
    "validate_entry",
    "validate_sidecar",
    "verdict",
    "verdict_text",
]
