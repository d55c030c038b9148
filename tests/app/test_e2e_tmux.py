"""End to end: the installed ``dsh-replay-tui`` in a real terminal (tmux), driven by the demo agent.

The screen is read with ``tmux capture-pane``; a screen has no events, so each wait
polls it against a bounded deadline.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from dsh_replay_tui.widgets.chunk_list import chunk_row

from replay_engine import load_scenario

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
    """One tmux server on a private socket, running one command in one pane.

    The server starts with ``remain-on-exit on`` from its config file, so the pane (and
    what the command printed) stays readable whenever the command ends, however early.
    """

    def __init__(self, socket_name: str, config: Path) -> None:
        self.socket = socket_name
        self.config = config
        config.write_text("set-option -g remain-on-exit on\n", encoding="utf-8")

    def tmux(self, *args: str) -> str:
        assert TMUX is not None
        # An explicit env: readline (loaded under pytest) exports COLUMNS=80/LINES=24 into the
        # process environment behind os.environ's back, and Textual would size itself by them.
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        done = subprocess.run([TMUX, "-L", self.socket, "-f", str(self.config), *args], env=env,
                              capture_output=True, text=True, timeout=10, check=False)
        if done.returncode != 0:
            pytest.fail(f"tmux {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout

    def start(self, cwd: Path, *command: str, size: tuple[int, int] = (200, 50)) -> None:
        """Run ``command`` in a new detached session named e2e (200x50 unless ``size``)."""
        self.tmux("new-session", "-d", "-x", str(size[0]), "-y", str(size[1]), "-s", "e2e",
                  "-c", str(cwd), *command)

    def screen(self, *, history: bool = False) -> str:
        """The visible screen (with ``history``, also the lines scrolled off the top)."""
        return self.tmux("capture-pane", "-p", *(["-S", "-"] if history else []), "-t", "e2e")

    def pane(self) -> tuple[bool, int | None]:
        """Whether the pane's command has ended, and its exit status once tmux knows it."""
        dead, _, status = self.tmux("list-panes", "-t", "e2e", "-F",
                                    "#{pane_dead} #{pane_dead_status}").strip().partition(" ")
        if dead == "1" and not status:
            # The pane reads dead when its pty closes; the status comes when tmux reaps the
            # process on SIGCHLD. tmux built with libutempter can miss that SIGCHLD (it arrives
            # while utempter, run for the closing pty, holds the handler): the process stays a
            # zombie, the status never comes and "Pane is dead" is never printed. Another
            # SIGCHLD makes tmux reap now; a spare one is harmless.
            os.kill(self.server_pid(), signal.SIGCHLD)
        return dead == "1", int(status) if dead == "1" and status else None

    def server_pid(self) -> int:
        """The tmux server's process id."""
        return int(self.tmux("display-message", "-p", "#{pid}").strip())

    def died(self, what: str) -> None:
        """Fail: the command ended while the test waited for ``what``; show why."""
        deadline = time.monotonic() + 5
        while (status := self.pane()[1]) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        pytest.fail(f"the TUI exited (status {status}) while waiting for {what}; its screen "
                    f"was:\n{self.screen(history=True).rstrip()}")

    def wait_for_status(self) -> int:
        """The exit status of the pane's command, once tmux has reaped it."""
        deadline = time.monotonic() + DEADLINE_S
        while (status := self.pane()[1]) is None:
            if time.monotonic() > deadline:
                pytest.fail(f"the pane's command did not end; the screen was:\n{self.screen()}")
            time.sleep(0.1)
        return status

    def wait_for(self, what: str, check: Callable[[str], bool], *, history: bool = False,
                 exited: bool = False) -> str:
        """Poll the screen until ``check`` holds; fail with the last screen after the deadline,
        or at once with the screen and exit status when the command ended (unless ``exited``)."""
        deadline = time.monotonic() + DEADLINE_S
        while True:
            dead = self.pane()[0]
            screen = self.screen(history=history)
            if check(screen):
                return screen
            if dead and not exited:
                self.died(what)
            if time.monotonic() > deadline:
                pytest.fail(f"timed out after {DEADLINE_S:g}s waiting for {what}; the screen was:\n{screen}")
            time.sleep(0.1)


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    term = Terminal(f"dsh-replay-e2e-{os.getpid()}-{uuid.uuid4().hex[:8]}", tmp_path / "tmux.conf")
    try:
        yield term
    finally:
        subprocess.run([TMUX or "tmux", "-L", term.socket, "kill-server"], capture_output=True,
                       timeout=10, check=False)


@pytest.mark.parametrize("size", [(200, 50), (80, 24)], ids=["200x50", "80x24"])
def test_tui_in_tmux_served_by_the_demo_agent(terminal: Terminal, tmp_path: Path, samples: Path,
                                              size: tuple[int, int]) -> None:
    assert TUI is not None and CLI is not None
    scenario = samples / "basic-chat"
    terminal.start(tmp_path, TUI, str(scenario), "--port", "0", "--ready-dir", str(tmp_path), size=size)

    # Wait for the first full paint: the header's second line and the live log's serving line.
    screen = terminal.wait_for(
        "the server URL in the header",
        lambda s: re.search(r"waiting for the agent\s+bound 0/1", s) is not None
        and re.search(r"serving on " + URL_RE.pattern, s) is not None)
    match = URL_RE.search(screen)
    assert match, screen
    url = match.group(0)
    first, second = screen.splitlines()[:2]
    assert first.startswith(" waiting for the agent  bound 0/1")  # the state first, then where
    assert "basic-chat" in second and url in second
    # The footer offers what acts now: nothing is bound, so the demo agent and the break modes.
    screen = terminal.wait_for("the footer", lambda s: "Demo agent" in s.rstrip().splitlines()[-1])
    footer = screen.rstrip().splitlines()[-1]
    for item in ("2 Break at calls", "3 Break at chunks", "d Demo agent", "? Help", "q Quit"):
        assert item in footer, (item, footer)

    # The help screen lists every key of the main screen, by area; Esc closes it.
    terminal.tmux("send-keys", "-t", "e2e", "?")
    # The title can paint a frame before the rows under it, so wait for both.
    terminal.wait_for("the help screen", lambda s: "Keys (/ filters, Esc closes)" in s and "Move" in s
                      and "Focus the scripts pane." in s)
    terminal.tmux("send-keys", "-t", "e2e", "Escape")
    terminal.wait_for("the help screen to close", lambda s: "Keys (/ filters, Esc closes)" not in s)

    demo = subprocess.run([CLI, "demo-agent", url, "--ready-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=60, check=False)
    if demo.returncode != 0 and terminal.pane()[0]:
        terminal.died("the demo agent to finish")
    assert demo.returncode == 0, demo.stdout + demo.stderr
    lines = demo.stdout.splitlines()
    assert len(lines) == 3 and lines[-1].startswith("consumed"), demo.stdout

    # The header turns to consumed, both calls carry the served mark, the cursor of demo-0
    # reached 2/2 and the live log tells the story.
    screen = terminal.wait_for("the header to say consumed",
                               lambda s: re.search(r"consumed ✓\s+bound 1/1", s) is not None
                               and "call #1 finished" in s)
    assert re.search(r"✓ #0\s+1/1\s+chunks", screen) and re.search(r"✓ #1\s+1/2\s+chunks", screen), screen
    assert re.search(r"demo-0\s+2/2\s+idle\s+\[0\] sample-basic-chat", screen), screen
    assert "demo-0 call #1 finished (6 chunk(s) served)" in screen
    if size[1] >= 50:
        assert "bound demo-0 → script [0] sample-basic-chat" in screen
        assert "demo-0 call #0 finished (10 chunk(s) served)" in screen

    terminal.tmux("send-keys", "-t", "e2e", "q")
    status = terminal.wait_for_status()
    # tmux writes "Pane is dead" once it has drained everything the process printed; the
    # verdict may have scrolled into the history by then.
    screen = terminal.wait_for("the verdict the TUI prints on quit",
                               lambda s: "Pane is dead" in s, history=True, exited=True)
    assert "replay consumed (run default)" in screen, screen
    assert status == 0, screen


def test_a_newcomer_steps_a_call_chunk_by_chunk_at_80x24(terminal: Terminal, tmp_path: Path,
                                                         samples: Path) -> None:
    """Break at chunks, the demo agent connected from the app (d), n pressed again and again:
    each released chunk's text is on screen, and the footer says which keys act."""
    assert TUI is not None
    scenario = samples / "basic-chat"
    chunks = load_scenario(scenario).scripts[0].entries[0].entry.chunks  # type: ignore[union-attr]
    terminal.start(tmp_path, TUI, str(scenario), "--port", "0", "--ready-dir", str(tmp_path),
                   size=(80, 24))
    terminal.wait_for("the first paint", lambda s: "d Demo agent" in s)
    terminal.tmux("send-keys", "-t", "e2e", "3")
    terminal.wait_for("chunk mode", lambda s: "mode chunk" in s)
    terminal.tmux("send-keys", "-t", "e2e", "d")
    terminal.wait_for("the dialect chooser", lambda s: "Run the demo agent over which wire" in s)
    terminal.tmux("send-keys", "-t", "e2e", "Enter")
    screen = terminal.wait_for("the first pause", lambda s: "PAUSED 1" in s
                               and "paused before chunk 0" in s)
    assert "n Next chunk" in screen.rstrip().splitlines()[-1], screen
    for released, chunk in enumerate(chunks):
        terminal.tmux("send-keys", "-t", "e2e", "n")
        row = f"{released} {chunk_row(chunk)}"[:60]
        after = f"paused before chunk {released + 1}" if released + 1 < len(chunks) else \
            "call #1 paused before chunk 0"  # call #0 ended: the demo agent asks for the next
        screen = terminal.wait_for(f"chunk {released} on screen",
                                   lambda s, r=row, a=after: r in s and a in s)
        assert screen.splitlines()[0].startswith(" PAUSED 1") or released + 1 == len(chunks)
    terminal.tmux("send-keys", "-t", "e2e", "c")  # continue: the demo agent finishes the run
    terminal.wait_for("the run to end consumed", lambda s: "consumed ✓" in s)
    terminal.tmux("send-keys", "-t", "e2e", "q")
    assert terminal.wait_for_status() == 0
