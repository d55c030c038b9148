"""The debugger's module layout: no import cycle, and the loader works without Textual."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest
from dsh_replay_tui.headless.loading import ScenarioLoader
from dsh_replay_tui.headless.state import AppOptions, DebugState

from replay_engine import SIDECAR_NAME, ReplayEngine, ReplayError, Scenario
from tests.conftest import ROOT, SAMPLES


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, module: str) -> set[str]:
    """The app modules a module imports at load time (``TYPE_CHECKING`` blocks included)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == "app":
                found.add(target)
                found.update(f"{target}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "app")
    return found


def test_no_app_module_imports_one_that_imports_it_back() -> None:
    files = {_module_of(p): p for p in (ROOT / "app").rglob("*.py")}
    graph = {m: {t for t in _imports(p, m) if t in files and t != m} for m, p in files.items()}
    assert "app.screens.main" in graph["app.app"]
    cycles: list[list[str]] = []

    def visit(module: str, trail: list[str]) -> None:
        for target in sorted(graph[module]):
            if target in trail:
                cycles.append([*trail[trail.index(target):], target])
            elif target not in done:
                visit(target, [*trail, target])
        done.add(module)

    done: set[str] = set()
    for module in sorted(graph):
        if module not in done:
            visit(module, [module])
    assert cycles == []


class _RecordingView:
    """The loader's view, kept as lists: what a load showed."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.shown: list[Scenario] = []
        self.errors: list[tuple[str, ReplayError]] = []

    def log_line(self, line: str) -> None:
        self.lines.append(line)

    def request_flush(self) -> None:
        pass

    def show_scenario(self, scenario: Scenario) -> None:
        self.shown.append(scenario)

    def show_load_error(self, title: str, error: ReplayError) -> None:
        self.errors.append((title, error))


class _Guard:
    def __init__(self) -> None:
        self.unsaved = False
        self.deferred = False
        self.why: list[str] = []

    def has_unsaved_changes(self) -> bool:
        return self.unsaved

    def defer(self, why: str) -> None:
        self.deferred = True
        self.why.append(why)


@pytest.mark.anyio
async def test_loader_keeps_the_last_good_scripts_and_waits_for_the_editor(tmp_path: Path) -> None:
    root = tmp_path / "basic-chat"
    shutil.copytree(SAMPLES / "basic-chat", root)
    engine = ReplayEngine([])
    state = DebugState(AppOptions(scenario=root), engine)
    view, guard = _RecordingView(), _Guard()
    loader = ScenarioLoader(state, view, guard)

    assert await loader.load(initial=True)
    assert state.scenario is view.shown[0] and engine.scripts == state.scenario.scripts
    assert view.lines[0].startswith(f"loaded {root}: 1 session script(s)")

    (root / SIDECAR_NAME).write_text("{not json", encoding="utf-8")
    assert not await loader.load()
    title, error = view.errors[-1]
    assert title.startswith("Reload failed — still serving the last good scripts")
    assert state.load_error is error and error.code == "SIDECAR_INVALID"
    assert engine.scripts == view.shown[0].scripts

    guard.unsaved = True
    assert not await loader.load(why="files changed")
    assert guard.why == ["files changed"] and len(view.shown) == 1
    with pytest.raises(ReplayError) as refused:
        await loader.reload_from_api()
    assert refused.value.code == "RELOAD_DEFERRED"


def test_every_headless_module_loads_without_textual() -> None:
    """What the debugger decides without a screen loads in an interpreter with no Textual."""
    import subprocess
    import sys

    names = sorted(f"dsh_replay_tui.headless.{p.stem}" for p in (ROOT / "app" / "headless").glob("*.py")
                   if p.stem != "__init__")
    assert "dsh_replay_tui.headless.loading" in names
    probe = ("import importlib, sys\n"
             f"for name in {names!r}:\n"
             "    importlib.import_module(name)\n"
             "print(','.join(sorted({m.split('.')[0] for m in sys.modules} & {'textual'})))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
