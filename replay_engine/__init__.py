"""dsh-replay's core: load recorded agent sessions, derive scripts, and replay them exactly.

This package never imports the TUI; everything here works headless. The imports under
``TYPE_CHECKING`` below are the public API, written once: type checkers read them as they
are, and at run time they are only read (``_public``), so each name's module loads on first
use and ``import replay_engine`` (and the ``dsh-replay`` start-up) does not pay for pydantic,
anyio and the server up front. ``__all__`` is made from them; the debugger in ``app/`` uses
nothing else, and docs/api.md lists every name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .authoring.draft import (
        EntryComparison as EntryComparison,
        EntryTextError as EntryTextError,
        OverrideDraft as OverrideDraft,
        SavedSidecar as SavedSidecar,
        parse_entry_text as parse_entry_text,
    )
    from .authoring.raw import (
        RawSidecar as RawSidecar,
        open_raw_sidecar as open_raw_sidecar,
    )
    from .authoring.unfinished import (
        open_draft as open_draft,
    )
    from .context import (
        ContextItem as ContextItem,
        DiffRow as DiffRow,
        content_text as content_text,
        context_range as context_range,
        diff_context as diff_context,
        diff_line as diff_line,
        live_new_messages as live_new_messages,
        recorded_context as recorded_context,
    )
    from .engine import (
        DEFAULT_RUN as DEFAULT_RUN,
        HANG_PREFIX as HANG_PREFIX,
        BindingState as BindingState,
        CallRecord as CallRecord,
        Pace as Pace,
        ReplayEngine as ReplayEngine,
        RunState as RunState,
        StagedScripts as StagedScripts,
        StepMode as StepMode,
        events as events,
        parse_breakpoint as parse_breakpoint,
    )
    from .engine.placeholders import (
        resolve_scripted_entry as resolve_scripted_entry,
    )
    from .engine.tokens import (
        TOKEN_MARKER as TOKEN_MARKER,
    )
    from .errors import (
        MAX_LISTED_PROBLEMS as MAX_LISTED_PROBLEMS,
        UNFINISHED_CALL as UNFINISHED_CALL,
        AbortedError as AbortedError,
        BindingError as BindingError,
        CannotListenError as CannotListenError,
        ConfigError as ConfigError,
        DerivationError as DerivationError,
        EntryProblem as EntryProblem,
        InputError as InputError,
        LogParseError as LogParseError,
        NotConsumedError as NotConsumedError,
        PlaceholderError as PlaceholderError,
        ReplayError as ReplayError,
        ScenarioNotFoundError as ScenarioNotFoundError,
        ScriptedFailure as ScriptedFailure,
        ScriptExhaustedError as ScriptExhaustedError,
        SidecarError as SidecarError,
        UnrecordedSessionError as UnrecordedSessionError,
    )
    from .files import (
        Rename as Rename,
        atomic_write as atomic_write,
        fingerprint as fingerprint,
        output_file_problem as output_file_problem,
    )
    from .models import (
        AnyEntry as AnyEntry,
        ChunksEntry as ChunksEntry,
        HangEntry as HangEntry,
        ModelConfig as ModelConfig,
        ProviderConfig as ProviderConfig,
        ReplayConfig as ReplayConfig,
        ScriptEntry as ScriptEntry,
        SessionScript as SessionScript,
        ThrowEntry as ThrowEntry,
        entry_to_json as entry_to_json,
    )
    from .presentation import (
        EXIT_FAILED as EXIT_FAILED,
        EXIT_INTERRUPTED as EXIT_INTERRUPTED,
        EXIT_NOT_CONSUMED as EXIT_NOT_CONSUMED,
        EXIT_NOT_SERVING as EXIT_NOT_SERVING,
        EXIT_OK as EXIT_OK,
        EXIT_USAGE as EXIT_USAGE,
        VERDICT_WAITING as VERDICT_WAITING,
        divergence_note as divergence_note,
        run_verdict as run_verdict,
        summarize_entry as summarize_entry,
        verdict as verdict,
        verdict_text as verdict_text,
    )
    from .record import (
        CallReport as CallReport,
        Recording as Recording,
        check_upstream as check_upstream,
        record_scenario as record_scenario,
    )
    from .record.redact import (
        shown_url as shown_url,
    )
    from .record.repair import (
        RepairSession as RepairSession,
    )
    from .record.summary import (
        recording_summary as recording_summary,
        report_warnings as report_warnings,
    )
    from .review import (
        CallDiff as CallDiff,
        ScenarioDiff as ScenarioDiff,
        ScriptDiff as ScriptDiff,
        diff_scenarios as diff_scenarios,
    )
    from .safe_text import (
        printable as printable,
    )
    from .scenario.derive import (
        derive_replay_script as derive_replay_script,
        js_string as js_string,
    )
    from .scenario.derive_fast import (
        load_log as load_log,
    )
    from .scenario.layout import (
        generation_label as generation_label,
        is_scenario_file as is_scenario_file,
    )
    from .scenario.loading import (
        LoadProgress as LoadProgress,
        Scenario as Scenario,
        load_replay_script as load_replay_script,
        load_scenario as load_scenario,
        load_session_scripts as load_session_scripts,
    )
    from .scenario.logs import (
        parse_session_header as parse_session_header,
        parse_session_log as parse_session_log,
    )
    from .scenario.sidecar import (
        SIDECAR_NAME as SIDECAR_NAME,
        load_sidecar as load_sidecar,
        parse_sidecar_text as parse_sidecar_text,
        validate_entry as validate_entry,
        validate_sidecar as validate_sidecar,
    )
    from .server import (
        ReplayServer as ReplayServer,
    )
    from .server.listen import (
        loopback_warning as loopback_warning,
    )
    from .server.options import (
        ServeOptions as ServeOptions,
        add_serve_arguments as add_serve_arguments,
        serve_fields as serve_fields,
        serve_options as serve_options,
    )
    from .statuscodes import (
        STATUS_BY_CODE as STATUS_BY_CODE,
        known_throw_codes as known_throw_codes,
        throw_code_warning as throw_code_warning,
    )
    from .testing.demo_agent import (
        run_demo_agent as run_demo_agent,
    )
    from .testing.demo_conversation import (
        run_demo_conversation as run_demo_conversation,
    )
    from .version import (
        VersionAction as VersionAction,
    )
    from .wire.dialect import (
        WireOptions as WireOptions,
    )

_where: dict[str, str] | None = None


def _public() -> dict[str, str]:
    """Each public name and the module it lives in, read from the ``TYPE_CHECKING`` imports of
    this file (parsed once, not run)."""
    global _where
    if _where is None:
        import ast
        from pathlib import Path

        tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
        block = next(node for node in tree.body if isinstance(node, ast.If)
                     and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
        _where = {alias.asname or alias.name: str(stmt.module) for stmt in block.body
                  if isinstance(stmt, ast.ImportFrom) for alias in stmt.names}
    return _where


def _first_use(name: str) -> Any:
    """``__all__``, or a public name, its module imported on first use (the module's
    ``__getattr__``, PEP 562)."""
    if name == "__all__":
        names = list(_public())
        globals()["__all__"] = names
        return names
    module = _public().get(name)
    if module is None:
        raise AttributeError(f"module 'replay_engine' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_public()))


if not TYPE_CHECKING:  # hidden from type checkers: a name not imported above is an error there
    __getattr__ = _first_use
