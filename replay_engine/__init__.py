"""dsh-replay's core: load recorded agent sessions, derive scripts, and replay them exactly.

This package never imports the TUI; everything here works headless.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    )
    from .errors import (
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
    from .logs import parse_session_header, parse_session_log
    from .models import (
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
    from .scenario import (
        Scenario,
        load_replay_script,
        load_scenario,
        load_scenario_config,
        load_session_scripts,
    )
    from .sidecar import Sidecar, load_sidecar, parse_sidecar_text, validate_entry, validate_sidecar

_LAZY: dict[str, str] = {
    "derive_replay_script": "derive",
    "js_string": "derive",
    "load_log": "derive",
    "BindingState": "engine",
    "CallHandle": "engine",
    "CallRecord": "engine",
    "DEFAULT_RUN": "engine",
    "Pace": "engine",
    "ReplayEngine": "engine",
    "RunState": "engine",
    "diff_scripts": "engine",
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
    "ScriptExhaustedError": "errors",
    "ScriptedFailure": "errors",
    "SidecarError": "errors",
    "UnrecordedSessionError": "errors",
    "parse_session_header": "logs",
    "parse_session_log": "logs",
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
    "resolve_scripted_entry": "placeholders",
    "Scenario": "scenario",
    "load_replay_script": "scenario",
    "load_scenario": "scenario",
    "load_scenario_config": "scenario",
    "load_session_scripts": "scenario",
    "Sidecar": "sidecar",
    "load_sidecar": "sidecar",
    "parse_sidecar_text": "sidecar",
    "validate_entry": "sidecar",
    "validate_sidecar": "sidecar",
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
    "DEFAULT_RUN",
    "AbortedError",
    "BindingError",
    "BindingState",
    "CallHandle",
    "CallRecord",
    "ChunksEntry",
    "ConfigError",
    "DerivationError",
    "HangEntry",
    "InputError",
    "LogParseError",
    "ModelConfig",
    "NotConsumedError",
    "OverrideDocument",
    "OverridePatch",
    "Pace",
    "PlaceholderError",
    "ProviderConfig",
    "ReplayConfig",
    "ReplayEngine",
    "ReplayEntry",
    "ReplayError",
    "RunState",
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
    "derive_replay_script",
    "diff_scripts",
    "entry_to_json",
    "js_string",
    "load_log",
    "load_replay_script",
    "load_scenario",
    "load_scenario_config",
    "load_session_scripts",
    "load_sidecar",
    "parse_session_header",
    "parse_session_log",
    "parse_sidecar_text",
    "resolve_scripted_entry",
    "validate_entry",
    "validate_sidecar",
]
