"""The engine's go-live rule (recording from the divergence): a bound call the rule picks is
refused with GoneLiveError (naming its script and call) instead of being served, every later
call of that session goes past the recording, and nothing is journaled as refused."""

from __future__ import annotations

import pytest

from replay_engine import ReplayEngine, ScriptExhaustedError
from replay_engine.errors import GoneLiveError
from tests.unit.enginetools import collect, scripts, text_entry

pytestmark = pytest.mark.anyio


async def test_a_picked_call_goes_live_with_the_rest_of_its_session() -> None:
    engine = ReplayEngine(scripts([text_entry("p0"), text_entry("p1"), text_entry("p2")],
                                  [text_entry("c0")]))
    picked: list[tuple[int, int]] = []

    def rule(script: int, call: int, found: object) -> bool:
        picked.append((script, call))
        return (script, call) == (0, 1)

    engine.configure_run("default", overflow=frozenset({"openai"}))
    engine.set_go_live("default", rule)
    assert (await collect(engine, "p"))[0]["text"] == "p0"
    with pytest.raises(GoneLiveError) as gone:
        engine.open_call("p", dialect="openai")
    assert (gone.value.script_index, gone.value.call_index) == (0, 1)
    with pytest.raises(ScriptExhaustedError) as later:  # the session stays live
        engine.open_call("p", dialect="openai")
    assert later.value.script_index == 0
    assert (await collect(engine, "c"))[0]["text"] == "c0"
    assert picked == [(0, 1)]  # only calls on the overflow wires are asked about
    assert engine.verdict_problems() == []  # nothing refused, nothing left unconsumed
    engine.set_go_live("default", None)


async def test_the_rule_leaves_other_wires_and_unset_runs_alone() -> None:
    engine = ReplayEngine(scripts([text_entry("p0"), text_entry("p1")]))
    engine.set_go_live("default", lambda script, call, found: True)
    # no overflow wire: the call is served from the recording
    assert (await collect(engine, "p"))[0]["text"] == "p0"
    engine.set_go_live("default", None)
    engine.configure_run("default", overflow=frozenset({"openai"}))
    assert (await collect(engine, "p"))[0]["text"] == "p1"
