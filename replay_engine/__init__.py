"""dsh-replay's core: load recorded agent sessions, derive scripts, and replay them exactly.

This package never imports the TUI; everything here works headless. ``__all__`` is the public
API (the debugger in ``app/`` uses nothing else); the HTTP server and the demo agent load on
first use, so importing the package stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .authoring.draft import (
        EntryComparison,
        EntryTextError,
        OverrideDraft,
        SavedSidecar,
        parse_entry_text,
    )
    from .authoring.unfinished import open_draft
    from .cli.version import VersionAction, package_version
    from .context import (
        ContextItem,
        DiffRow,
        content_text,
        context_range,
        diff_context,
        diff_line,
        live_new_messages,
        read_recorded_context,
        recorded_context,
    )
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
    from .engine.placeholders import resolve_scripted_entry
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
    from .presentation import (
        EXIT_FAILED,
        EXIT_NOT_CONSUMED,
        EXIT_NOT_SERVING,
        EXIT_OK,
        EXIT_USAGE,
        summarize_entry,
        verdict,
        verdict_text,
    )
    from .record import CallReport, Recording, check_upstream, record_scenario
    from .record.cli import recording_summary
    from .safe_text import printable
    from .scenario.config import load_serve_config
    from .scenario.derive import derive_replay_script, js_string
    from .scenario.derive_fast import load_log
    from .scenario.loading import (
        CHILD_RE,
        PRIMARY_NAME,
        Scenario,
        load_replay_script,
        load_scenario,
        load_scenario_config,
        load_session_scripts,
    )
    from .scenario.logs import parse_session_header, parse_session_log
    from .scenario.sidecar import (
        SIDECAR_NAME,
        Sidecar,
        load_sidecar,
        parse_sidecar_text,
        validate_entry,
        validate_sidecar,
    )
    from .server import ReplayServer, is_loopback
    from .server.listen import host_arg, port_arg
    from .testing.demo_agent import DEMO_DIALECTS, run_demo_agent

_LAZY: dict[str, str] = {
    "EntryComparison": "authoring.draft",
    "EntryTextError": "authoring.draft",
    "OverrideDraft": "authoring.draft",
    "SavedSidecar": "authoring.draft",
    "parse_entry_text": "authoring.draft",
    "open_draft": "authoring.unfinished",
    "load_serve_config": "scenario.config",
    "derive_replay_script": "scenario.derive",
    "js_string": "scenario.derive",
    "load_log": "scenario.derive_fast",
    "ContextItem": "context",
    "DiffRow": "context",
    "content_text": "context",
    "context_range": "context",
    "diff_context": "context",
    "diff_line": "context",
    "live_new_messages": "context",
    "read_recorded_context": "context",
    "recorded_context": "context",
    "DEFAULT_RUN": "engine",
    "BindingState": "engine",
    "CallHandle": "engine",
    "CallRecord": "engine",
    "Pace": "engine",
    "ReplayEngine": "engine",
    "RunState": "engine",
    "diff_scripts": "engine",
    "events": "engine",
    "UNFINISHED_CALL": "errors",
    "AbortedError": "errors",
    "BindingError": "errors",
    "ConfigError": "errors",
    "DerivationError": "errors",
    "InputError": "errors",
    "LogParseError": "errors",
    "NotConsumedError": "errors",
    "PlaceholderError": "errors",
    "ReplayError": "errors",
    "ScenarioNotFoundError": "errors",
    "ScriptedFailure": "errors",
    "ScriptExhaustedError": "errors",
    "SidecarError": "errors",
    "UnrecordedSessionError": "errors",
    "Rename": "files",
    "atomic_write": "files",
    "fingerprint": "files",
    "parse_session_header": "scenario.logs",
    "parse_session_log": "scenario.logs",
    "AnyEntry": "models",
    "ChunksEntry": "models",
    "HangEntry": "models",
    "ModelConfig": "models",
    "OverrideDocument": "models",
    "OverridePatch": "models",
    "ProviderConfig": "models",
    "ReplayConfig": "models",
    "ReplayEntry": "models",
    "ScriptEntry": "models",
    "SessionHeader": "models",
    "SessionScript": "models",
    "ThrowEntry": "models",
    "entry_to_json": "models",
    "resolve_scripted_entry": "engine.placeholders",
    "EXIT_FAILED": "presentation",
    "EXIT_NOT_CONSUMED": "presentation",
    "EXIT_NOT_SERVING": "presentation",
    "EXIT_OK": "presentation",
    "EXIT_USAGE": "presentation",
    "summarize_entry": "presentation",
    "verdict": "presentation",
    "verdict_text": "presentation",
    "CHILD_RE": "scenario.loading",
    "PRIMARY_NAME": "scenario.loading",
    "Scenario": "scenario.loading",
    "load_replay_script": "scenario.loading",
    "load_scenario": "scenario.loading",
    "load_scenario_config": "scenario.loading",
    "load_session_scripts": "scenario.loading",
    "SIDECAR_NAME": "scenario.sidecar",
    "Sidecar": "scenario.sidecar",
    "load_sidecar": "scenario.sidecar",
    "parse_sidecar_text": "scenario.sidecar",
    "validate_entry": "scenario.sidecar",
    "validate_sidecar": "scenario.sidecar",
    "ReplayServer": "server",
    "is_loopback": "server",
    "host_arg": "server.listen",
    "printable": "safe_text",
    "port_arg": "server.listen",
    "run_demo_agent": "testing.demo_agent",
    "DEMO_DIALECTS": "testing.demo_agent",
    "CallReport": "record",
    "Recording": "record",
    "check_upstream": "record",
    "record_scenario": "record",
    "recording_summary": "record.cli",
    "package_version": "cli.version",
    "VersionAction": "cli.version",
}
"""Where each public name lives: imported on first use, so ``import replay_engine`` (and
the ``dsh-replay`` start-up) does not pay for pydantic, anyio and the server up front."""


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'replay_engine' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "UNFINISHED_CALL",
    "CHILD_RE",
    "DEFAULT_RUN",
    "EXIT_FAILED",
    "EXIT_NOT_CONSUMED",
    "EXIT_NOT_SERVING",
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
    "ContextItem",
    "DerivationError",
    "DiffRow",
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
    "VersionAction",
    "atomic_write",
    "content_text",
    "context_range",
    "derive_replay_script",
    "diff_context",
    "diff_line",
    "diff_scripts",
    "entry_to_json",
    "events",
    "fingerprint",
    "is_loopback",
    "host_arg",
    "printable",
    "port_arg",
    "js_string",
    "live_new_messages",
    "load_log",
    "load_replay_script",
    "load_scenario",
    "load_scenario_config",
    "load_serve_config",
    "load_session_scripts",
    "load_sidecar",
    "open_draft",
    "package_version",
    "parse_entry_text",
    "parse_session_header",
    "parse_session_log",
    "parse_sidecar_text",
    "read_recorded_context",
    "recorded_context",
    "resolve_scripted_entry",
    "run_demo_agent",
    "DEMO_DIALECTS",
    "CallReport",
    "Recording",
    "check_upstream",
    "record_scenario",
    "recording_summary",
    "summarize_entry",
    "validate_entry",
    "validate_sidecar",
    "verdict",
    "verdict_text",
]
