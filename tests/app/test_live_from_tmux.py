"""End to end in a real terminal: ``dsh-replay-tui DIR --upstream URL --from-divergence`` goes
live at the agent's divergence, the review opens on V and k keeps the repaired scenario."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from tests.app.test_e2e_tmux import TUI, URL_RE, Terminal, pytestmark, terminal
from tests.plugin.plugintools import ThreadedUpstream, files_of
from tests.record.repairtools import converse, echo_answer, record_plan

__all__ = ["pytestmark", "terminal"]

PLAN = {"main": ["a1", "a2", "a3"], "helper": ["b1", "b2"]}


def test_live_from_the_divergence_reviewed_and_kept_in_tmux(terminal: Terminal,
                                                            tmp_path: Path) -> None:
    assert TUI is not None
    upstream = ThreadedUpstream({"ok": lambda body: echo_answer("", body)})
    try:
        scenario = tmp_path / "scenario"
        asyncio.run(record_plan(scenario, upstream.url(), PLAN, "v4"))
        before = files_of(scenario)
        terminal.start(tmp_path, TUI, str(scenario), "--port", "0", "--upstream", upstream.url(),
                       "--from-divergence", size=(160, 45))
        screen = terminal.wait_for("the server URL", lambda s: re.search(
            r"serving on " + URL_RE.pattern, s) is not None)
        match = re.search(r"serving on (" + URL_RE.pattern + ")", screen)
        assert match, screen
        changed = {"main": ["a1", "a2", "a3 now"], "helper": ["b1", "b2"]}
        answers = asyncio.run(converse(match.group(1) + "/v1", changed))
        assert answers["main"][-1] == "re: a3 now"
        assert len(upstream.requests) == 5 + 1
        terminal.wait_for("the live header", lambda s: "● LIVE FROM #2 → " in s)
        terminal.tmux("send-keys", "-t", "e2e", "V")
        screen = terminal.wait_for("the review and its keys", lambda s: "Review before keeping" in s
                                   and "Discard" in s and "re: a3 now" in s)
        assert "≠ [0] #2 changed: text, context" in screen, screen
        assert "old: [0] #2" in screen and "new: [0] #2" in screen
        assert "re: a3 now" in screen and "Keep" in screen and "Discard" in screen
        terminal.tmux("send-keys", "-t", "e2e", "k")
        terminal.wait_for("kept", lambda s: "kept: 1 new call(s) installed" in s)
        terminal.tmux("send-keys", "-t", "e2e", "q")
        terminal.wait_for_status()
    finally:
        upstream.close()
    after = files_of(scenario)
    assert after["session.1.v4.jsonl"] == before["session.1.v4.jsonl"]
    assert after["session.v4.jsonl.bak.1"] == before["session.v4.jsonl"]
