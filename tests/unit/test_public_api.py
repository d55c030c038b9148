"""The package boundary: replay_engine never imports the TUI, ``__all__`` is real, and the TUI
uses nothing but ``__all__``."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys

import replay_engine
from tests.conftest import ROOT


def _modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(replay_engine.__path__, "replay_engine."))


def test_no_textual_or_app_in_any_module() -> None:
    modules = _modules()
    assert "replay_engine.engine" in modules and "replay_engine.cli.dispatch" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'app', 'dsh_replay_tui'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


def test_cli_parser_build_does_not_import_textual() -> None:
    code = ("import sys\nfrom replay_engine.cli.dispatch import build_parser\nbuild_parser()\n"
            "print(any(m.split('.')[0] in ('textual', 'app', 'dsh_replay_tui') for m in sys.modules))")
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


def _library_references(source: str, filename: str) -> list[tuple[int, str, str]]:
    """(line, module, name) of every import from replay_engine in one source, and of every string
    naming one of its modules (``importlib.import_module("replay_engine.x")``)."""
    tree = ast.parse(source, filename=filename)
    found: list[tuple[int, str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None \
                and node.module.split(".")[0] == "replay_engine":
            found.extend((node.lineno, node.module, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, "") for alias in node.names
                         if alias.name.split(".")[0] == "replay_engine")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value.startswith("replay_engine."):
            found.append((node.lineno, node.value, ""))
    return found


def test_the_tui_imports_only_names_in_all() -> None:
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "app").rglob("*.py"))
    assert "app/app.py" in files
    public = set(replay_engine.__all__)
    seen = 0
    bad: list[str] = []
    for path in files:
        for line, module, name in _library_references((ROOT / path).read_text(encoding="utf-8"), path):
            seen += 1
            if module != "replay_engine" or name not in public:
                bad.append(f"{path}:{line}: {module} {name}".rstrip())
    assert seen > 10  # the walk really sees the TUI's imports
    assert bad == []


def test_the_reference_walk_flags_private_paths() -> None:
    source = ("from replay_engine import ReplayEngine\nfrom replay_engine.engine import Pace\n"
              "import replay_engine.server\nx = 'replay_engine.demo_agent'\nfrom . import sibling\n")
    assert _library_references(source, "probe.py") == [
        (1, "replay_engine", "ReplayEngine"), (2, "replay_engine.engine", "Pace"),
        (3, "replay_engine.server", ""), (4, "replay_engine.demo_agent", "")]


def test_importing_the_package_leaves_the_server_for_first_use() -> None:
    code = ("import sys\nimport replay_engine\n"
            "print(sorted(m for m in ('uvicorn', 'starlette', 'httpx') if m in sys.modules))\n"
            "from replay_engine import ReplayServer, printable, run_demo_agent\n"
            "from replay_engine.server import ReplayServer as direct\n"
            "print(ReplayServer is direct, printable('a') == 'a', callable(run_demo_agent))\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["[]", "True True True"]


def test_every_import_path_in_the_docs_works() -> None:
    """Every ``from replay_engine... import ...`` and dotted name the README and docs/ show."""
    import importlib
    import re

    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    text = "\n".join(page.read_text(encoding="utf-8") for page in pages)
    found = re.findall(r"from (replay_engine[\w.]*) import ([\w, ]+)", text)
    found += [(m, n) for m, n in re.findall(r"`(replay_engine(?:\.\w+)+)\.(\w+)`", text)]
    assert ("replay_engine.server", "serve_scenario") in found
    for module, names in found:
        imported = importlib.import_module(module)
        for name in (n.strip() for n in names.split(",")):
            assert hasattr(imported, name), f"docs: from {module} import {name}"
    from replay_engine.server import ReplayServer, create_app  # docs/api.md names them too

    assert callable(ReplayServer) and callable(create_app)


def _type_checking_imports() -> dict[str, str]:
    """Each name ``replay_engine/__init__.py`` imports under ``TYPE_CHECKING`` and its module."""
    tree = ast.parse((ROOT / "replay_engine" / "__init__.py").read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.level == 1, ast.dump(stmt)
                for alias in stmt.names:
                    assert alias.asname == alias.name, f"{alias.name}: re-export it as itself"
                    found[alias.name] = str(stmt.module)
    return found


def test_the_type_checking_imports_are_the_one_list() -> None:
    """What type checkers see is ``__all__`` and what the first use loads, name for name."""
    typed = _type_checking_imports()
    assert len(typed) > 50
    assert replay_engine.__all__ == list(typed)
    import importlib

    for name, module in typed.items():
        assert getattr(replay_engine, name) is getattr(
            importlib.import_module(f"replay_engine.{module}"), name), name
    assert not [name for name, module in typed.items() if module.split(".")[0] == "cli"]
    assert "__all__" in dir(replay_engine) or "ReplayEngine" in dir(replay_engine)
    namespace: dict[str, object] = {}
    exec("from replay_engine import *", namespace)
    assert set(typed) <= set(namespace)


def _tested_as_public() -> set[str]:
    """Names the tests import from ``replay_engine`` itself."""
    names: set[str] = set()
    for path in (ROOT / "tests").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for _, module, name in _library_references(text, str(path)):
            if module == "replay_engine" and name:
                names.add(name)
    return names


def _documented() -> set[str]:
    """The names docs/api.md lists: a list item whose head is names in backticks then a colon
    (``- `a(x)`, `b`: what they are``); a bullet of prose (``- `listener=` is called``) is not."""
    import re

    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    names: set[str] = set()
    for line in text.splitlines():
        if head := re.match(r"- ((?:`[^`]+`(?:, | and )?)+):", line):
            names.update(re.findall(r"`(\w+)", head.group(1)))
    return names


def _debugger_uses() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "app").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        names.update(name for _, module, name in _library_references(text, str(path))
                     if module == "replay_engine")
    return names


def test_what_a_user_catches_and_prints_is_public() -> None:
    import pytest

    from replay_engine import ConfigError, ReplayEngine, ReplayError, printable

    with pytest.raises(ConfigError) as raised:
        ReplayEngine([], journal_limit=0)
    assert isinstance(raised.value, ReplayError) and raised.value.code == "CONFIG"
    assert printable("a\nb\x00") == "a\\nb\\x00"


def test_every_public_name_is_used_documented_and_tested_or_used_by_the_debugger() -> None:
    public = set(replay_engine.__all__)
    documented = _documented()
    assert sorted(public - documented) == []  # docs/api.md lists every public name
    assert sorted(documented - public) == []  # and no name that is not public
    used = _debugger_uses() | _tested_as_public()
    assert sorted(public - used) == []  # nobody uses it: drop it from the API


def test_the_debuggers_headless_modules_load_without_textual() -> None:
    """``app/headless`` is the debugger's state without its screen: importing every module of
    it must not import Textual (the import-linter contract checks the static imports; this
    checks what actually loads)."""
    headless = sorted(p.stem for p in (ROOT / "app" / "headless").glob("*.py") if p.stem != "__init__")
    assert "state" in headless and "verdicts" in headless
    package = "dsh_replay_tui.headless"
    code = (
        "import importlib, sys\n"
        f"for name in {headless!r}:\n"
        f"    importlib.import_module('{package}.' + name)\n"
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] == 'textual')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


def test_the_debugger_installs_under_the_distributions_own_name() -> None:
    """The folder is app/, the import name dsh_replay_tui: nothing called ``app`` lands in
    site-packages, and the package list names every package folder (a missing one would be
    left out of the wheel without a word)."""
    import tomllib
    from importlib.metadata import distribution

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(project["tool"]["setuptools"]["packages"])
    folders = {".".join(p.parent.relative_to(ROOT).parts) for p in ROOT.glob("replay_engine/**/__init__.py")}
    folders |= {".".join(("dsh_replay_tui", *p.parent.relative_to(ROOT / "app").parts))
                for p in (ROOT / "app").glob("**/__init__.py")}
    assert listed == folders
    assert project["tool"]["setuptools"]["package-dir"] == {"dsh_replay_tui": "app"}
    assert all(not name.split(".")[0] == "app" for name in listed)
    scripts = {e.name: e.value for e in distribution("dsh-replay-tui").entry_points
               if e.group == "console_scripts"}
    assert scripts["dsh-replay-tui"] == "dsh_replay_tui.__main__:main"
    done = subprocess.run([sys.executable, "-c", "import dsh_replay_tui, importlib.util;"
                           "print(importlib.util.find_spec('app') is None)"],
                          cwd="/", capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "True"), done.stderr
