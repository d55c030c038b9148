"""Exit statuses of the installed ``dsh-replay-tui`` in a real terminal: a scenario that never
loaded exits 1, a port it cannot listen on exits 4 (never 0, never the 3 of "not consumed")."""

from __future__ import annotations

import socket
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
