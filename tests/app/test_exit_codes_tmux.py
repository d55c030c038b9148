"""Exit statuses of the installed ``dsh-replay-tui`` in a real terminal: a scenario that never
loaded exits 1, a port it cannot listen on exits 4 (never 0, never the 3 of "not consumed"),
SIGTERM quits as q does, and a closed terminal ends it."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from pathlib import Path

from tests.app.test_e2e_tmux import TUI, Terminal, pytestmark, terminal  # noqa: F401


def quit_and_read(terminal: Terminal) -> tuple[int, str]:  # noqa: F811
    """Press q; the exit status and everything the pane showed (the verdict is printed last)."""
    terminal.tmux("send-keys", "-t", "e2e", "q")
    status = terminal.wait_for_status()
    screen = terminal.wait_for("the verdict the TUI prints on quit",
                               lambda s: "Pane is dead" in s, history=True, exited=True)
    return status, screen


def test_a_scenario_that_never_loaded_exits_1(terminal: Terminal, tmp_path: Path) -> None:  # noqa: F811
    assert TUI is not None
    terminal.start(tmp_path, TUI, str(tmp_path / "nope"), "--port", "0")
    terminal.wait_for("the header", lambda s: "nothing loaded" in s and "press l" in s)
    status, screen = quit_and_read(terminal)
    assert "replay NOT served: the scenario never loaded" in screen, screen
    assert "replay consumed" not in screen
    assert status == 1, screen


def test_a_busy_port_exits_4(terminal: Terminal, tmp_path: Path, samples: Path) -> None:  # noqa: F811
    assert TUI is not None
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        terminal.start(tmp_path, TUI, str(samples / "basic-chat"), "--port", str(port))
        terminal.wait_for("the banner", lambda s: f"Cannot serve on 127.0.0.1:{port}" in s)
        status, screen = quit_and_read(terminal)
    assert f"replay NOT served: cannot listen on 127.0.0.1:{port}" in screen, screen
    assert status == 4, screen


def test_sigterm_quits_as_q_does(terminal: Terminal, tmp_path: Path, samples: Path) -> None:  # noqa: F811
    # kill (or timeout, or a closed window) ended the debugger mid-frame: the screen stayed in
    # the alternate buffer, no verdict was printed and --verdict-file was not written.
    assert TUI is not None
    verdict = tmp_path / "verdict.json"
    terminal.start(tmp_path, TUI, str(samples / "basic-chat"), "--port", "0", "--verdict-file",
                   str(verdict), size=(80, 24))
    terminal.wait_for("the first paint", lambda s: "waiting for the agent" in s)
    pid = int(terminal.tmux("list-panes", "-t", "e2e", "-F", "#{pane_pid}").strip())
    os.kill(pid, signal.SIGTERM)
    status = terminal.wait_for_status()
    screen = terminal.wait_for("the verdict", lambda s: "Pane is dead" in s, history=True,
                               exited=True)
    assert status == 3, screen
    assert "replay NOT consumed (run default):" in screen, screen
    assert "waiting for the agent" not in terminal.screen(), "the last frame was left on screen"
    assert json.loads(verdict.read_text(encoding="utf-8"))["run"] == "default"


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def test_a_closed_terminal_ends_the_debugger(terminal: Terminal, tmp_path: Path, samples: Path) -> None:  # noqa: F811
    # Quitting through the screen on SIGHUP waited forever on the closed terminal: the process
    # outlived it, holding its port.
    assert TUI is not None
    terminal.start(tmp_path, TUI, str(samples / "basic-chat"), "--port", "0", size=(80, 24))
    terminal.wait_for("the first paint", lambda s: "waiting for the agent" in s)
    pid = int(terminal.tmux("list-panes", "-t", "e2e", "-F", "#{pane_pid}").strip())
    terminal.tmux("kill-session", "-t", "e2e")
    deadline = time.monotonic() + 10
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = running(pid)
    if alive:
        os.kill(pid, signal.SIGKILL)
    assert not alive, "the debugger outlived its terminal"
