"""End to end: the installed ``dsh-replay-tui`` in a real terminal (tmux), driven by the demo agent.

The screen is read with ``tmux capture-pane``; a screen has no events, so each wait
polls it against a bounded deadline.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

TMUX = shutil.which("tmux")
TUI = shutil.which("dsh-replay-tui")
CLI = shutil.which("dsh-replay")
DEADLINE_S = 30.0

pytestmark = [
    pytest.mark.skipif(TMUX is None, reason="tmux is not installed (.ci/run installs it)"),
    pytest.mark.skipif(TUI is None or CLI is None,
                       reason="the dsh-replay-tui / dsh-replay console scripts are not installed "
                              "(pip install -e '.[dev]')"),
]

URL_RE = re.compile(r"http://127\.0\.0\.1:\d+")


class Terminal:
    """One tmux server on a private socket, running one command in a 200x50 pane."""

    def __init__(self, socket_name: str) -> None:
        self.socket = socket_name

    def tmux(self, *args: str) -> str:
        assert TMUX is not None
        # An explicit env: readline (loaded under pytest) exports COLUMNS=80/LINES=24 into the
        # process environment behind os.environ's back, and Textual would size itself by them.
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        done = subprocess.run([TMUX, "-L", self.socket, "-f", os.devnull, *args], env=env,
                              capture_output=True, text=True, timeout=10, check=True)
        return done.stdout

    def screen(self, *, history: bool = False) -> str:
        """The visible screen (with ``history``, also the lines scrolled off the top)."""
        return self.tmux("capture-pane", "-p", *(["-S", "-"] if history else []), "-t", "e2e")

    def dead_status(self) -> int | None:
        """The command's exit status once it ended, else None."""
        dead, _, status = self.tmux("display-message", "-p", "-t", "e2e",
                                    "#{pane_dead} #{pane_dead_status}").strip().partition(" ")
        # The pane can read as dead before tmux has reaped the process and knows its status.
        return int(status) if dead == "1" and status else None

    def wait_for_status(self) -> int:
        """The exit status of the pane's command, once tmux has reaped it."""
        deadline = time.monotonic() + DEADLINE_S
        while (status := self.dead_status()) is None:
            if time.monotonic() > deadline:
                pytest.fail(f"the pane's command did not end; the screen was:\n{self.screen()}")
            time.sleep(0.1)
        return status

    def wait_for(self, what: str, check: Callable[[str], bool], *, history: bool = False) -> str:
        """Poll the screen until ``check`` holds; fail with the last screen after the deadline."""
        deadline = time.monotonic() + DEADLINE_S
        while True:
            screen = self.screen(history=history)
            if check(screen):
                return screen
            if time.monotonic() > deadline:
                pytest.fail(f"timed out after {DEADLINE_S:g}s waiting for {what}; the screen was:\n{screen}")
            time.sleep(0.1)


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    term = Terminal(f"dsh-replay-e2e-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        yield term
    finally:
        subprocess.run([TMUX or "tmux", "-L", term.socket, "kill-server"], capture_output=True,
                       timeout=10, check=False)


def test_tui_in_tmux_served_by_the_demo_agent(terminal: Terminal, tmp_path: Path, samples: Path) -> None:
    assert TUI is not None and CLI is not None
    scenario = samples / "basic-chat"
    # remain-on-exit keeps the pane (and what the TUI printed on quit) after it exits.
    terminal.tmux("new-session", "-d", "-x", "200", "-y", "50", "-s", "e2e", "-c", str(tmp_path),
                  TUI, str(scenario), "--port", "0", "--ready-dir", str(tmp_path),
                  ";", "set-option", "-t", "e2e", "remain-on-exit", "on")

    # Wait for the first full paint: the header's second line and the live log's serving line.
    screen = terminal.wait_for(
        "the server URL in the header",
        lambda s: "Pane is dead" in s or re.search(r"bound 0/1\s+not consumed", s) is not None
        and re.search(r"serving on " + URL_RE.pattern, s) is not None)
    match = URL_RE.search(screen)
    assert match, f"the TUI exited before showing its URL:\n{screen}"
    url = match.group(0)
    header = screen.splitlines()[0]
    assert "basic-chat" in header and url in header

    demo = subprocess.run([CLI, "demo-agent", url, "--ready-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    lines = demo.stdout.splitlines()
    assert len(lines) == 3 and lines[-1].startswith("consumed"), demo.stdout

    # The header turns to consumed, both calls carry the served mark, the cursor of demo-0
    # reached 2/2 and the live log tells the story.
    screen = terminal.wait_for("the header to say consumed",
                               lambda s: re.search(r"bound 1/1\s+consumed", s) is not None
                               and "call #1 finished" in s)
    assert re.search(r"✓ #0\s+chunks", screen) and re.search(r"✓ #1\s+chunks", screen), screen
    assert re.search(r"demo-0\s+\[0\] sample-basic-chat\s+2/2\s+idle", screen), screen
    assert "bound demo-0 → script [0] sample-basic-chat" in screen
    assert "demo-0 call #0 finished (10 chunk(s) served)" in screen
    assert "demo-0 call #1 finished (6 chunk(s) served)" in screen

    terminal.tmux("send-keys", "-t", "e2e", "q")
    # tmux writes "Pane is dead" once it has drained everything the process printed; the
    # verdict may have scrolled into the history by then.
    screen = terminal.wait_for("the TUI to quit on 'q' and print its verdict",
                               lambda s: "Pane is dead" in s, history=True)
    assert "replay consumed (run default)" in screen, screen
    assert terminal.wait_for_status() == 0, screen
