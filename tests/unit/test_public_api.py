"""The package boundary: replay_engine never imports the TUI, and ``__all__`` is real."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import replay_engine
from tests.conftest import ROOT


def _modules() -> list[str]:
    return sorted(
        f"replay_engine.{m.name}" for m in pkgutil.iter_modules(replay_engine.__path__)
    )


def test_no_textual_or_app_in_any_module() -> None:
    modules = _modules()
    assert "replay_engine.engine" in modules and "replay_engine.cli" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'app'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


def test_cli_parser_build_does_not_import_textual() -> None:
    code = ("import sys\nfrom replay_engine.cli import build_parser\nbuild_parser()\n"
            "print(any(m.split('.')[0] in ('textual', 'app') for m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_all_names_exist_and_are_unique() -> None:
    names = replay_engine.__all__
    assert len(names) == len(set(names))
    missing = [n for n in names if not hasattr(replay_engine, n)]
    assert missing == []
    for required in ("parse_session_log", "parse_session_header", "derive_replay_script",
                     "load_replay_script", "load_session_scripts", "load_scenario",
                     "resolve_scripted_entry", "ReplayEngine", "ReplayError"):
        assert required in names


def test_error_codes_are_stable_and_distinct() -> None:
    from replay_engine import errors

    codes = {
        errors.LogParseError: "LOG_PARSE", errors.DerivationError: "DERIVATION",
        errors.SidecarError: "SIDECAR_INVALID", errors.ConfigError: "CONFIG",
        errors.ScenarioNotFoundError: "SCENARIO_NOT_FOUND",
        errors.UnrecordedSessionError: "UNRECORDED_SESSION",
        errors.ScriptExhaustedError: "SCRIPT_EXHAUSTED", errors.NotConsumedError: "NOT_CONSUMED",
        errors.AbortedError: "ABORTED", errors.PlaceholderError: "PLACEHOLDER",
        errors.ServerUnreachableError: "SERVER_UNREACHABLE",
    }
    for cls, code in codes.items():
        assert cls.code == code
        assert issubclass(cls, errors.ReplayError)
    assert errors.ScriptedFailure("m", "AUTH").code == "AUTH"
    assert issubclass(errors.LogParseError, errors.InputError)
    assert issubclass(errors.ScriptExhaustedError, errors.BindingError)
    assert errors.ClientGone().code == "CLIENT_CLOSED" and errors.ClientGone().status == 400
    assert issubclass(errors.ClientGone, errors.BadRequest)
    assert errors.BINDING_CODES == {errors.UnrecordedSessionError.code,
                                    errors.ScriptExhaustedError.code}


def test_every_error_class_lives_in_errors() -> None:
    import importlib
    import inspect

    names = [m.name for m in pkgutil.walk_packages(replay_engine.__path__, "replay_engine.")]
    assert "replay_engine.engine.core" in names
    strays = []
    for name in names:
        module = importlib.import_module(name)
        strays += [f"{name}.{cls.__name__}" for cls in vars(module).values()
                   if inspect.isclass(cls) and issubclass(cls, BaseException)
                   and cls.__module__ == name and name != "replay_engine.errors"]
    assert strays == []
