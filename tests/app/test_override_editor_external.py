"""``E``: the sidecar (or the file and line an event-log line names) opened in $VISUAL / $EDITOR,
the debugger suspended meanwhile, the scenario reloaded after. The editor is the test's own
script; it runs for real, in tmux with a real suspend, under Pilot through the same action with
the terminal hand-over made a no-op (Pilot's driver cannot suspend)."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from dsh_replay_tui.app import ReplayApp
from dsh_replay_tui.headless.external_editor import (
    NO_EDITOR,
    EditTarget,
    editor_argv,
    editor_command,
    named_file_line,
)

from tests.app.apptools import copy_sample, make_app, until
from tests.app.test_e2e_tmux import TMUX, TUI, Terminal
from tests.conftest import SAMPLES
from tests.unit.enginetools import sidecar_bytes

SIDE = "replay.override.json"
HANG = sidecar_bytes({"patches": [{"at": 0, "entry": {"kind": "hang"}}]})


def test_the_editor_comes_from_visual_then_editor() -> None:
    assert editor_command({"VISUAL": "nvim", "EDITOR": "nano"}) == ["nvim"]
    assert editor_command({"VISUAL": " ", "EDITOR": "emacs -nw"}) == ["emacs", "-nw"]
    assert editor_command({"EDITOR": "'/opt/my editor/bin/ed' --x"}) == ["/opt/my editor/bin/ed",
                                                                         "--x"]
    assert editor_command({}) is None
    assert "EDITOR" in NO_EDITOR and "export" in NO_EDITOR


def test_each_editor_gets_the_line_its_own_way(tmp_path: Path) -> None:
    at = EditTarget(tmp_path / "session.jsonl", 7)
    path = str(at.path)
    assert editor_argv(["vim"], at) == ["vim", "+7", path]
    assert editor_argv(["/usr/bin/nano"], at) == ["/usr/bin/nano", "+7", path]
    assert editor_argv(["emacs", "-nw"], at) == ["emacs", "-nw", "+7", path]
    assert editor_argv(["hx"], at) == ["hx", f"{path}:7"]
    assert editor_argv(["code", "--wait"], at) == ["code", "--wait", "--goto", f"{path}:7"]
    assert editor_argv(["my-editor"], at) == ["my-editor", path]
    assert editor_argv(["vim"], EditTarget(at.path)) == ["vim", path]


def test_a_log_line_names_the_file_and_line(tmp_path: Path) -> None:
    log = tmp_path / "run" / "session.jsonl"
    log.parent.mkdir()
    log.write_text("{}\n")
    line = f"load failed [LOG_PARSE]: {log}:5: not valid JSON"
    assert named_file_line(line, Path("/")) == EditTarget(log, 5)
    assert named_file_line("load failed: run/session.jsonl:12: x", tmp_path) == EditTarget(log, 12)
    assert named_file_line("missing/session.jsonl:3: gone", tmp_path) is None
    assert named_file_line("call #0 finished (10 chunk(s) served)", tmp_path) is None


def editor_script(tmp_path: Path, *, replacement: Path | None = None) -> Path:
    """A fake ``vi``: records its arguments and whether it had the terminal, then writes a hang
    sidecar (or, given ``replacement``, copies that file over the one it opens)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "vi"
    script.write_text(
        f"#!{sys.executable}\n"
        "import os, pathlib, shutil, sys\n"
        "args = sys.argv[1:]\n"
        f"pathlib.Path({str(tmp_path / 'editor-args.json')!r}).write_text(\n"
        "    repr({'args': args, 'tty': os.isatty(0)}))\n"
        "target = pathlib.Path(args[-1])\n"
        f"replacement = {str(replacement) if replacement else None!r}\n"
        "if replacement:\n"
        "    shutil.copy(replacement, target)\n"
        "else:\n"
        f"    target.write_bytes({HANG!r})\n",
        encoding="utf-8")
    script.chmod(0o755)
    return script


def editor_ran(tmp_path: Path) -> dict[str, object]:
    import ast

    value = ast.literal_eval((tmp_path / "editor-args.json").read_text())
    assert isinstance(value, dict)
    return value


def hand_over_allowed(app: ReplayApp, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pilot's driver cannot suspend; the action's hand-over becomes a no-op, the rest is real."""
    monkeypatch.setattr(app, "suspend", contextlib.nullcontext)


@pytest.mark.anyio
async def test_e_edits_the_sidecar_and_the_scenario_reloads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = copy_sample(SAMPLES, "basic-chat", tmp_path)
    monkeypatch.setenv("VISUAL", str(editor_script(tmp_path)))
    app = make_app(root)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        hand_over_allowed(app, monkeypatch)
        assert app.engine.scripts[0].entries[0].entry.kind == "chunks"
        await pilot.press("E")
        await until(app, lambda: app.engine.scripts[0].entries[0].entry.kind == "hang",
                    "the reload after the edit")
        assert any(f"E: opening {root / SIDE} in " in line for line in app.live_pane.lines)
    assert editor_ran(tmp_path)["args"] == [str(root / SIDE)]
    assert (root / SIDE).read_bytes() == HANG


@pytest.mark.anyio
@pytest.mark.parametrize("from_log", [True, False], ids=["log-line", "load-error"])
async def test_e_on_a_log_line_opens_its_file_at_its_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, from_log: bool) -> None:
    root = copy_sample(SAMPLES, "broken-json-line", tmp_path)
    good = SAMPLES / "basic-chat" / "session.jsonl"
    monkeypatch.setenv("EDITOR", str(editor_script(tmp_path, replacement=good)))
    monkeypatch.delenv("VISUAL", raising=False)
    app = make_app(root)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        assert app.scenario is None
        hand_over_allowed(app, monkeypatch)
        if from_log:  # the log line names it; else the load error does
            log = app.live_pane.event_log
            failed = next(i for i, line in enumerate(app.live_pane.lines) if "load failed" in line)
            log.focus()
            log.move_to(failed)
        await pilot.press("E")
        await until(app, lambda: app.scenario is not None, "the reload of the fixed log")
        assert not app.banner.showing
    assert editor_ran(tmp_path)["args"] == ["+5", str(root / "session.jsonl")]
    assert (root / "session.jsonl").read_bytes() == good.read_bytes()


@pytest.mark.anyio
async def test_without_an_editor_or_a_terminal_e_says_what_to_do(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = copy_sample(SAMPLES, "basic-chat", tmp_path)
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    app = make_app(root)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        await pilot.press("E")
        await until(app, lambda: any("no editor set" in x for x in app.live_pane.lines))
        assert [n.message for n in app._notifications] == [NO_EDITOR]
        # An editor, but Pilot's driver cannot hand the terminal over: a message, no crash.
        monkeypatch.setenv("EDITOR", str(editor_script(tmp_path)))
        await pilot.press("E")
        await until(app, lambda: any("cannot hand this terminal" in x
                                     for x in app.live_pane.lines))
        assert app.is_running and not (tmp_path / "editor-args.json").exists()
    assert not (root / SIDE).exists()


@pytest.mark.skipif(TMUX is None or TUI is None, reason="needs tmux and the dsh-replay-tui script")
def test_e_in_a_real_terminal_suspends_runs_the_editor_and_reloads(tmp_path: Path) -> None:
    root = tmp_path / "basic-chat"
    shutil.copytree(SAMPLES / "basic-chat", root)
    script = editor_script(tmp_path)
    terminal = Terminal(f"dsh-replay-editor-{tmp_path.name}", tmp_path / "tmux.conf")
    assert TUI is not None
    try:
        terminal.start(tmp_path, "env", f"EDITOR={script}", "VISUAL=", TUI, str(root), "--port",
                       "0", size=(80, 24))
        terminal.wait_for("the first paint", lambda s: "serving on" in s)
        terminal.tmux("send-keys", "-t", "e2e", "E")
        # The editor's close and the watcher both see the save: one reloads, the other (always
        # second) says the content is already loaded; then Live zoomed shows the whole log.
        terminal.wait_for("the reloaded script and the skipped second reload",
                          lambda s: "hang   patched" in s and "content already loaded" in s)
        terminal.tmux("send-keys", "-t", "e2e", "F4")
        terminal.wait_for("Live focused", lambda s: "┏━ Live" in s)
        terminal.tmux("send-keys", "-t", "e2e", "z")
        screen = terminal.wait_for("the reload", lambda s: "reloaded:" in s and "z Restore" in s)
        assert "~1 changed" in screen
        assert screen.count("reloaded:") == 1
    finally:
        subprocess.run([TMUX or "tmux", "-L", terminal.socket, "kill-server"],
                       capture_output=True, timeout=10, check=False)
    ran = editor_ran(tmp_path)
    assert ran == {"args": [str(root / SIDE)], "tty": True}  # it had the terminal
    assert json.loads((root / SIDE).read_text())["patches"][0]["entry"] == {"kind": "hang"}


@pytest.mark.anyio
@pytest.mark.parametrize("editor", ["nosuch-editor", "nosuch-code --wait", "/nowhere/bin/vi"])
async def test_an_editor_that_cannot_start_is_a_message_and_the_debugger_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, editor: str) -> None:
    root = copy_sample(SAMPLES, "basic-chat", tmp_path)
    monkeypatch.setenv("VISUAL", editor)
    app = make_app(root)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        hand_over_allowed(app, monkeypatch)
        await pilot.press("E")
        program = editor.split()[0]
        await until(app, lambda: any(f"E: cannot run {program}: it " in x
                                     for x in app.live_pane.lines), "the message")
        assert "$VISUAL / $EDITOR" in [n.message for n in app._notifications][-1]
        assert not any("E: opening" in x for x in app.live_pane.lines)
        await pilot.press("q")  # the debugger still answers its keys
    assert app.return_code == 3 and "NOT consumed" in str(app.return_value)


@pytest.mark.skipif(TMUX is None or TUI is None, reason="needs tmux and the dsh-replay-tui script")
@pytest.mark.parametrize("editor", ["nosuch-editor", "nosuch-code --wait"])
def test_a_missing_editor_in_a_real_terminal_leaves_the_debugger_running(
        tmp_path: Path, editor: str) -> None:
    terminal = Terminal(f"dsh-replay-noeditor-{uuid.uuid4().hex[:12]}", tmp_path / "tmux.conf")
    assert TUI is not None
    try:
        terminal.start(tmp_path, "env", f"VISUAL={editor}", TUI, str(SAMPLES / "basic-chat"),
                       "--port", "0", size=(80, 24))
        terminal.wait_for("the first paint", lambda s: "serving on" in s)
        terminal.tmux("send-keys", "-t", "e2e", "E")
        terminal.wait_for("the message", lambda s: "is not installed" in s and "Scripts" in s)
        terminal.tmux("send-keys", "-t", "e2e", "q")
        assert terminal.wait_for_status() == 3
        screen = terminal.wait_for("the verdict", lambda s: "Pane is dead" in s, history=True,
                                   exited=True)
        assert "NOT consumed" in screen
    finally:
        subprocess.run([TMUX or "tmux", "-L", terminal.socket, "kill-server"],
                       capture_output=True, timeout=10, check=False)


@pytest.mark.anyio
async def test_o_and_e_on_a_persisted_session_say_it_has_no_sidecar(tmp_path: Path) -> None:
    # o opened a whole editor screen that blamed DSH_SNAPSHOT_FILE, which nobody had set: the
    # scenario was a persisted session given as a file.
    from dsh_replay_tui.headless.loading import NO_SIDECAR
    from dsh_replay_tui.screens.main import MainScreen

    from tests.unit.test_persisted_sessions import HEADER, _call, _frame, _store

    store = _store(tmp_path, [_frame(HEADER), _frame(_call("one", 1))])
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        await pilot.press("down", "o")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        await pilot.press("E")
        await until(app, lambda: len(app._notifications) == 2, "the second notice")
        assert [n.message for n in app._notifications] == [NO_SIDECAR, NO_SIDECAR]
