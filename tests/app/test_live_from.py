"""Going live from a call in the debugger (``dsh-replay-tui DIR --upstream URL``): a real openai
client drives the embedded server, the diverged tail goes to a loopback upstream that counts
its calls, Live shows it as it is recorded under ``● LIVE FROM #N → upstream``, and the review
(old beside new, jumping between changed calls) ends in keep (installed) or discard (the
scenario byte for byte)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from dsh_replay_tui.__main__ import build_parser, options_from_args
from dsh_replay_tui.screens.help import HelpScreen
from dsh_replay_tui.screens.review import ReviewScreen

from tests.app.apptools import make_app, until
from tests.plugin.plugintools import files_of
from tests.record.repairtools import Plan, converse, echo_upstream, record_plan

pytestmark = pytest.mark.anyio

PLAN: Plan = {"main": ["a1", "a2", "a3"], "helper": ["b1", "b2"]}


@pytest.mark.parametrize("fmt", ["v1", "v4"])
async def test_from_divergence_goes_live_then_the_review_keeps_it(tmp_path: Path,
                                                                 fmt: str) -> None:
    scenario = tmp_path / "scenario"
    async with echo_upstream() as upstream:
        await record_plan(scenario, upstream.url, PLAN, fmt)
        before = files_of(scenario)
        app = make_app(scenario, upstream=upstream.url, live_from=True, from_divergence=True)
        async with app.run_test(size=(160, 45)) as pilot:
            await app.replay_ready.wait()
            assert app.url is not None
            changed = {"main": ["a1", "a2"], "helper": ["b1", "b2 reworded"]}
            answers = await converse(app.url + "/v1", changed)
            assert answers == {"main": ["re: a1", "re: a2"],
                               "helper": ["re: b1", "re: b2 reworded"]}
            assert len(upstream.requests) == 5 + 1  # only the helper's diverged call
            await until(app, lambda: "● LIVE FROM #1 of script 1 → " in app.header.text.plain,
                        "the live header")
            assert any("● live helper" in line for line in app.live_pane.lines)
            await pilot.press("V")
            await until(app, lambda: isinstance(app.screen, ReviewScreen), "the review")
            review = app.screen
            assert isinstance(review, ReviewScreen)
            shown = [(s.index, c.index, c.status) for s, c in review.rows]
            assert (1, 1, "changed") in shown and (0, 2, "same") in shown
            assert review.rows[review.current or 0][1].status == "changed"  # preselected
            await pilot.press("right_square_bracket")
            await pilot.press("k")
            await until(app, lambda: not isinstance(app.screen, ReviewScreen), "the review ends")
            await until(app, lambda: any("kept: 1 new call(s)" in line
                                         for line in app.live_pane.lines), "kept")
    child = "session.1.v4.jsonl" if fmt == "v4" else "session.1.jsonl"
    primary = "session.v4.jsonl" if fmt == "v4" else "session.jsonl"
    after = files_of(scenario)
    assert after[primary] == before[primary]
    assert after[f"{child}.bak.1"] == before[child] and after[child] != before[child]
    assert not list(tmp_path.glob("*.recording-*"))


async def test_go_live_from_the_selected_call_then_discard(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario"
    async with echo_upstream() as upstream:
        await record_plan(scenario, upstream.url, PLAN, "v1")
        before = files_of(scenario)
        app = make_app(scenario, upstream=upstream.url, live_from=True)
        async with app.run_test(size=(160, 45)) as pilot:
            await app.replay_ready.wait()
            assert app.url is not None
            changed = {"main": ["a1", "a2 other", "a3"]}
            await converse(app.url + "/v1", changed)  # replayed: the old answers, diverged
            assert len(upstream.requests) == 5
            await until(app, lambda: app.scripts_view.selected() == (0, 1),
                        "the diverged call preselected")
            await pilot.press("L")
            await until(app, lambda: any("live from #1 of script 0 armed: the run was reset"
                                         in line for line in app.live_pane.lines), "armed")
            answers = await converse(app.url + "/v1", changed)
            assert answers["main"] == ["re: a1", "re: a2 other", "re: a3"]
            assert len(upstream.requests) == 5 + 2
            await until(app, lambda: "● LIVE FROM #1 → " in app.header.text.plain,
                        "the live header")
            await pilot.press("V")
            await until(app, lambda: isinstance(app.screen, ReviewScreen), "the review")
            # ? lists the review's keys (it showed no key, only the main screen's search syntax).
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpScreen)
            assert [area for area, _ in app.screen.sections] == ["Review"]
            assert "Keep" not in app.screen.note and "Search syntax" not in app.screen.note
            await pilot.press("escape")
            await pilot.press("x")
            await until(app, lambda: any("discarded" in line for line in app.live_pane.lines),
                        "discarded")
    assert files_of(scenario) == before
    assert not list(tmp_path.glob("*.recording-*"))


async def test_quitting_before_the_review_says_where_the_attempt_is(tmp_path: Path) -> None:
    # q after going live printed only the verdict: nothing said that the new calls sit,
    # unreviewed and not installed, in DIR.recording-N.
    scenario = tmp_path / "scenario"
    async with echo_upstream() as upstream:
        shown = upstream.url
        await record_plan(scenario, upstream.url, PLAN, "v1")
        before = files_of(scenario)
        app = make_app(scenario, upstream=upstream.url, live_from=True)
        async with app.run_test(size=(80, 24)) as pilot:
            await app.replay_ready.wait()
            assert app.url is not None
            app.scripts_view.select(0, 1)
            await pilot.press("L")
            await converse(app.url + "/v1", {"main": ["a1", "a2 other", "a3"]})
            await until(app, lambda: "● LIVE FROM #1 → " in app.header.text.plain,
                        "the live header")
            await pilot.press("q")
        attempts = list(tmp_path.glob("scenario.recording-*"))
    assert len(attempts) == 1 and files_of(scenario) == before
    printed = str(app.return_value)
    assert printed.splitlines()[-1] == (
        f"went live: 2 call(s) from {shown} kept in {attempts[0]}, not reviewed and not "
        "installed (the scenario is unchanged)")


def test_the_command_line_takes_upstream_without_record(tmp_path: Path) -> None:
    args = build_parser().parse_args([str(tmp_path), "--upstream", "http://127.0.0.1:9",
                                      "--from-divergence"])
    args.scenario_path = tmp_path
    options = options_from_args(args)
    assert options.live_from and options.from_divergence
    args = build_parser().parse_args([str(tmp_path), "--from-divergence"])
    args.scenario_path = tmp_path
    with pytest.raises(argparse.ArgumentTypeError, match="--from-divergence goes with"):
        options_from_args(args)


def test_the_live_header_keeps_its_review_key_beside_the_path_at_80_columns() -> None:
    # "V: review, then keep or discard" left too little room for the path at 80 columns, so the
    # key was the segment dropped (the second line read "agent → URL  …  into DIR").
    from dsh_replay_tui.headless.header import RecordFacts, fit, record_lines
    from dsh_replay_tui.headless.screenfacts import LIVE_STOP

    facts = RecordFacts(upstream="http://127.0.0.1:28124", url="http://127.0.0.1:28123",
                        scenario="/tmp/nc-tui-live", calls=(("demo-0", 1),),
                        title="● LIVE FROM #1 → http://127.0.0.1:28124", stop=LIVE_STOP)
    second = fit(record_lines(facts)[1], 78).plain  # the header's width at 80 (padding 0 1)
    assert "V: review" in second and second.endswith("nc-tui-live"), second
