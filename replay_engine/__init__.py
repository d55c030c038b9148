"""dsh-replay's core: load recorded agent sessions, derive scripts, and replay them exactly.

This package never imports the TUI; everything here works headless.
"""

from __future__ import annotations

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
