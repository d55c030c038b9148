"""The debugger at 80x24, driven with Pilot: one focus stop per pane, zoom, the context footer in
each moment, the header's order, the two-line banner, the released chunk kept on screen while
stepping, the pace ladder, the event log that keeps following, and what the panes say when there
is nothing to show yet."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from dsh_replay_tui import keymap
from dsh_replay_tui.headless.pace import step_pace
from dsh_replay_tui.keymap import footer_width, shown_key
from dsh_replay_tui.screens.detail import DetailScreen
from dsh_replay_tui.screens.dialect_choice import DialectChoiceScreen
from dsh_replay_tui.screens.main import SIDE_BY_SIDE
from dsh_replay_tui.widgets.chunk_list import ChunkList, chunk_row
from dsh_replay_tui.widgets.rendered_lines import RenderedLines
from dsh_replay_tui.widgets.scripts_view import ROW_WIDTH

from replay_engine import Pace
from tests.app.apptools import BASIC_PROMPT, client, make_app, stream_text, until
from tests.conftest import SAMPLES

pytestmark = pytest.mark.anyio
BASIC = SAMPLES / "basic-chat"
NARROW = (80, 24)


def footer(app: object) -> list[tuple[str, str]]:
    return app.main.footer.shown  # type: ignore[attr-defined, no-any-return]


def header_lines(app: object) -> list[str]:
    """The header as painted at the terminal's width."""
    return app.header.render().plain.splitlines()  # type: ignore[attr-defined, no-any-return]


def fits(app: object) -> None:
    """The footer's keys fit 80 columns and every one of them is painted."""
    shown = footer(app)
    painted = app.main.footer.render().plain  # type: ignore[attr-defined]
    assert len(painted) <= NARROW[0], painted
    for key, label in shown:
        assert f"{key} {label}" in painted, (key, label, painted)


def heavy(widget: object) -> bool:
    return widget.styles.border_top[0] == "heavy"  # type: ignore[attr-defined, no-any-return]


# -- focus ---------------------------------------------------------------------------------


async def test_tab_stops_once_per_pane_straight_to_its_list() -> None:
    app = make_app(BASIC, serve=False)
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        await pilot.press("down")
        scripts, call, live = app.scripts_view, app.call_pane, app.live_pane
        assert app.focused is scripts and heavy(scripts) and not heavy(call)
        await pilot.press("tab")  # the call pane's list: its Output tab
        output = call.query_one("#output", RenderedLines)
        assert app.focused is output
        await pilot.pause()
        assert heavy(call) and not heavy(scripts)
        await pilot.press("down")  # the first press acts: the output's cursor moves
        assert output.cursor == 1
        await pilot.press("right_square_bracket")  # another tab: focus goes with it
        chunks = call.query_one(ChunkList)
        assert call.active == "chunks" and app.focused is chunks
        await pilot.press("tab")  # Live: its event log
        assert app.focused is live.event_log
        await pilot.press("left")  # inside Live: the sessions
        assert app.focused is live.session_list
        await pilot.press("tab", "shift+tab")  # Live remembers which of its lists was used
        assert app.focused is live.session_list
        await pilot.press("right")
        assert app.focused is live.event_log
        await pilot.press("tab")
        assert app.focused is scripts
        await pilot.press("shift+tab", "shift+tab")
        assert app.focused is chunks
        # F2-F4 jump to a pane without taking the step keys 1-3.
        for key, pane, target in (("f4", live, live.event_log), ("f2", scripts, scripts),
                                  ("f3", call, chunks)):
            await pilot.press(key)
            await pilot.pause()
            assert app.focused is target and heavy(pane), key


async def test_the_banner_is_a_stop_of_its_own_and_enter_opens_it_whole(tmp_path: Path) -> None:
    root = tmp_path / "broken"
    root.mkdir()
    (root / "session.jsonl").write_text((BASIC / "session.jsonl").read_text(encoding="utf-8"),
                                        encoding="utf-8")
    patches = [{"at": -1 - i, "entry": {"kind": "chunks", "chunks": []}} for i in range(60)]
    (root / "replay.override.json").write_text(json.dumps({"patches": patches}), encoding="utf-8")
    app = make_app(root)
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        await until(app, lambda: app.banner.showing, "the banner")
        await pilot.pause()
        banner = app.banner
        assert banner.region.height == 2  # two lines of 24, not ten
        lines = banner.render().plain.splitlines()
        assert len(lines) == 2 and all(len(line) <= NARROW[0] for line in lines)
        assert lines[0].startswith("Cannot load the scenario") and "press o to fix the sidecar" in lines[0]
        assert "replay.override.json: invalid override sidecar (60 problem(s))" in lines[1]
        assert lines[1].endswith("Enter: all")
        assert app.focused is banner  # nothing loaded: the banner has focus
        await pilot.press("tab")
        assert app.focused is app.scripts_view
        await pilot.press("shift+tab")
        assert app.focused is banner
        assert ("Enter", "Open") in footer(app)
        await pilot.press("enter")
        detail = app.screen
        assert isinstance(detail, DetailScreen)
        assert "… and 10 more problems" in detail.plain  # the message lists 50 …
        assert "All 60 problems:" in detail.plain  # … and every one of them is here
        assert "patch 59.at: must be an integer >= 0" in detail.plain
        await pilot.press("escape")


async def test_z_maximises_the_focused_pane_and_restores_the_layout() -> None:
    app = make_app(BASIC, serve=False)
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        await pilot.press("f3", "z")
        await pilot.pause()
        call = app.call_pane
        assert call.region.height == NARROW[1] - 3  # all but the header and the footer
        assert not app.scripts_view.display and not app.live_pane.display
        assert ("z", "Restore") in footer(app)
        await pilot.press("tab")  # the zoom moves with the focus
        await pilot.pause()
        assert app.live_pane.region.height == NARROW[1] - 3 and not call.display
        assert app.focused is app.live_pane.event_log
        await pilot.press("z")
        await pilot.pause()
        assert all(p.display for p in (app.scripts_view, call, app.live_pane))
        assert app.live_pane.region.height < NARROW[1] // 2
        assert ("z", "Zoom") in footer(app)


# -- the footer follows the moment ---------------------------------------------------------


async def test_footer_offers_the_keys_that_act_now() -> None:
    app = make_app(BASIC)
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        app.main.flush()  # paint now (nothing else may repaint)
        await pilot.pause()
        # Nothing bound: the demo agent first, then the break modes, help and quit last.
        shown = footer(app)
        assert shown[:3] == [("d", "Demo agent"), ("2", "Break at calls"), ("3", "Break at chunks")]
        assert shown[-2:] == [("?", "Help"), ("q", "Quit")]
        fits(app)
        await pilot.press("3")
        sdk = client(app, "s")
        reader = asyncio.create_task(stream_text(sdk))
        await until(app, lambda: ("n", "Next chunk") in footer(app), "the paused footer")
        assert [k for k, _ in footer(app)][:4] == ["n", "e", "c", "x"]
        assert ("d", "Demo agent") not in footer(app)
        fits(app)
        await pilot.press("c")
        await asyncio.wait_for(reader, 10)
        await until(app, lambda: ("a", "Assert") in footer(app), "the idle footer")
        # The search box: only its own keys (typing goes to the box, q would be typed).
        await pilot.press("slash")
        await pilot.pause()
        assert footer(app) == [("Enter", "Keep"), ("Esc", "Clear")]
        await pilot.press("escape")
        await pilot.pause()
        assert ("q", "Quit") in footer(app)
        # The focused pane adds its own: the call pane's tabs, Live's two lists.
        await pilot.press("f3")
        await pilot.pause()
        assert ("]", "Next tab") in footer(app)
        await pilot.press("f4")
        await pilot.pause()
        assert ("←→", "Sessions/log") in footer(app)
        fits(app)
        await sdk.close()


async def test_footer_of_a_scenario_that_does_not_load_offers_reload_and_the_editor() -> None:
    for name, wanted, absent in (("broken-json-line", ("l", "Reload"), ("o", "Override")),
                                 ("broken-unfinished-call", ("o", "Override"), None)):
        app = make_app(SAMPLES / name)
        async with app.run_test(size=NARROW) as pilot:
            await app.ready.wait()
            app.main.flush()
            await pilot.pause()
            assert wanted in footer(app), (name, footer(app))
            assert absent not in footer(app)
            assert ("b", "Breakpoint") not in footer(app)  # no call to put one on
            fits(app)


async def test_a_narrow_footer_keeps_the_demo_agent_while_nothing_is_bound() -> None:
    # At 60 columns the break modes and d do not all fit: d went first, and a newcomer with no
    # agent at hand was not told about it.
    app = make_app(BASIC)
    async with app.run_test(size=(60, 20)) as pilot:
        await app.ready.wait()
        app.main.flush()
        await pilot.pause()
        assert footer(app)[0] == ("d", "Demo agent")
        fits(app)


def test_footer_width_counts_what_is_painted() -> None:
    app_keys = [k for k in keymap.APP_KEYS if k.footer]
    assert footer_width(app_keys) == len("  ".join(f"{shown_key(k)} {k.label}" for k in app_keys))


# -- the header ----------------------------------------------------------------------------


async def test_header_puts_state_flags_first_and_keeps_them_at_80_columns(tmp_path: Path) -> None:
    deep = tmp_path / ("a-very-long-directory-name-" * 3) / "basic-chat"
    deep.parent.mkdir(parents=True)
    deep.symlink_to(BASIC, target_is_directory=True)
    app = make_app(deep)
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        await pilot.press("2", "b")  # break at calls, and a breakpoint
        sdk = client(app, "s")
        reader = asyncio.create_task(stream_text(sdk, BASIC_PROMPT))
        await until(app, lambda: "PAUSED 1" in app.header.text.plain, "the pause")
        first, second = header_lines(app)
        assert first.startswith("PAUSED 1  not consumed (1 paused)  bound 1/1  mode call"), first
        assert second.startswith("run default  pace no delay  http://127.0.0.1:")
        assert second.endswith("basic-chat") and "…" in second  # the path loses its start
        assert max(len(first), len(second)) <= NARROW[0] - 2
        await pilot.press("c")
        await asyncio.wait_for(reader, 10)
        await sdk.close()


async def test_the_scenario_path_stays_in_the_header_when_the_line_is_too_long(
        tmp_path: Path) -> None:
    """A long pace label (recorded gaps on a log without times) drops the URL, never the path:
    the path keeps its end, cut from the left with an ellipsis."""
    scenario = tmp_path / ("a-very-long-directory-name-" * 3) / "projected-chat"
    scenario.mkdir(parents=True)
    lines = (BASIC / "session.jsonl").read_text(encoding="utf-8").splitlines()
    out = [lines[0]]
    for line in lines[1:]:
        event = json.loads(line)
        for key in ("seq", "time", "seq0", "time0"):
            event.pop(key, None)
        out.append(json.dumps(event))
    (scenario / "session.jsonl").write_text("\n".join(out) + "\n", encoding="utf-8")
    app = make_app(scenario)
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        await pilot.press("t")
        await until(app, lambda: "no recorded times" in app.header.text.plain, "recorded pace")
        second = header_lines(app)[1]
        assert second.startswith("run default  pace recorded gaps x1"), second
        assert second.endswith("-name-/projected-chat") and "…" in second, second
        assert "no recorded times" in app.header.text.plain  # whole in the header's text
        assert len(second) <= NARROW[0] - 2, second


async def test_a_fresh_start_waits_for_the_agent_and_says_not_consumed_once_served() -> None:
    app = make_app(BASIC)
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        await pilot.pause()
        first = header_lines(app)[0]
        assert first.startswith("waiting for the agent  bound 0/1"), first
        assert "not consumed" not in app.header.text.plain
        styled = [span for span in app.header.text.spans if span.start == 0 and str(span.style)]
        assert not styled, styled  # a neutral colour, not a warning
        sdk = client(app, "s")
        await stream_text(sdk, BASIC_PROMPT)  # one of the two recorded calls
        await until(app, lambda: header_lines(app)[0].startswith("not consumed  bound 1/1"),
                    "the verdict once a call was served")
        await sdk.close()


async def test_live_shows_the_three_sessions_of_a_parent_and_two_subagents_at_once() -> None:
    app = make_app(SAMPLES / "nested-subagents")
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        await pilot.press("d")
        await until(app, lambda: isinstance(app.screen, DialectChoiceScreen), "the dialect chooser")
        await pilot.press("enter")
        await until(app, lambda: "demo agent (openai) done (consumed: True)" in app.live_pane.lines,
                    "the demo agent")
        await pilot.pause()
        view = app.live_pane.session_list
        painted = ["".join(seg.text for seg in view.render_line(y))
                   for y in range(view.scrollable_content_region.height)]
        assert view.scroll_y == 0
        assert [line.split()[0] for line in painted[:4]] == ["session", "demo-0", "demo-1",
                                                            "demo-2"], painted
        assert app.live_pane.event_log.scrollable_content_region.height >= 1  # events still show


async def test_pace_keys_climb_the_ladder_from_anywhere() -> None:
    app = make_app(BASIC, serve=False, pace=Pace("fixed", 400))
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        await pilot.press("plus")
        assert app.engine.pace == Pace("fixed", 250)
        await pilot.press("plus")
        assert app.engine.pace == Pace("fixed", 100)
        await pilot.press("minus", "minus", "minus")
        assert app.engine.pace == Pace("fixed", 1000)
        await pilot.press("minus")  # the slow end stays
        assert app.engine.pace == Pace("fixed", 1000)
        await pilot.press("t", "plus")  # recorded gaps: the speed climbs
        assert app.engine.pace == Pace("recorded", 1000, 2.0)
        await pilot.press("minus", "minus")
        assert app.engine.pace == Pace("recorded", 1000, 0.5)
        await until(app, lambda: "pace recorded gaps x0.5" in app.header.text.plain, "the header")
    assert step_pace(Pace("fixed", 400), 1) == Pace("fixed", 1000)
    assert step_pace(Pace("fixed", 0), -1) == Pace("fixed", 0)
    assert step_pace(Pace("recorded", 0, 3.0), -1) == Pace("recorded", 0, 4.0)


# -- stepping at 80x24 ---------------------------------------------------------------------


async def test_each_released_chunk_is_on_screen_while_stepping() -> None:
    app = make_app(BASIC)
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        await pilot.press("3")
        sdk = client(app, "s")
        reader = asyncio.create_task(stream_text(sdk))
        chunks = app.call_pane.query_one(ChunkList)
        recorded = app.scenario.scripts[0].entries[0].entry.chunks  # type: ignore[union-attr]
        for released in range(len(recorded)):
            await until(app, lambda r=released: bool(app.engine.state().bindings)
                        and app.engine.state().bindings[0].status == "paused"
                        and app.engine.state().bindings[0].chunks_served == r, f"pause {released}")
            await pilot.press("n")
            last = released == len(recorded) - 1  # the call ends: no highlight, the cursor stays
            await until(app, lambda r=released, end=last: chunks.highlight == r
                        or end and chunks.highlight is None, f"chunk {released}")
            await pilot.pause()
            # The chunk just released is on screen, and so is the next one when there is room.
            top, rows = chunks.scroll_offset.y, chunks.visible_rows
            assert top <= released < top + rows, (released, top, rows)
            painted = chunks.render_line(released - top).text
            assert painted.startswith(f"{released} {chunk_row(recorded[released])[:40]}"), painted
            if released + 1 < len(recorded):
                assert released + 1 < top + rows
        await asyncio.wait_for(reader, 10)
        assert app.call_pane.active == "chunks" and app.scripts_view.selected() == (0, 0)
        await sdk.close()


async def test_the_event_log_keeps_following_unless_scrolled_up() -> None:
    app = make_app(BASIC)
    async with app.run_test(size=NARROW, notifications=True) as pilot:
        await app.ready.wait()
        log = app.live_pane.event_log

        def newest_on_screen() -> bool:
            return log.scroll_offset.y + log.visible_rows >= log.row_count

        for keys in (["2"], ["1"], ["f4"], ["z"], ["z"], ["tab"], ["a", "escape"],
                     ["question_mark", "escape"], ["f4", "left"], ["right"], ["slash", "escape"],
                     ["plus"], ["minus"], ["R"], ["f4", "enter", "escape"]):
            await pilot.press(*keys)
            app.main.log_line(f"after {' '.join(keys)}")
            await pilot.pause()
            assert newest_on_screen(), (keys, log.scroll_offset.y, log.row_count)
        log.focus()
        await pilot.press("home")  # scrolled up: new lines do not move the view
        app.main.log_line("a line while reading older ones")
        await pilot.pause()
        assert log.scroll_offset.y == 0 and not newest_on_screen()
        await pilot.press("end")
        app.main.log_line("following again")
        await pilot.pause()
        assert newest_on_screen()


# -- what the panes say when there is nothing to show yet ----------------------------------


async def test_panes_say_how_to_go_on_before_anything_happens() -> None:
    app = make_app(BASIC)
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        app.main.flush()  # paint now (nothing else may repaint)
        await pilot.pause()
        hint = app.live_pane.session_list
        lines = [hint.row_text(i).plain for i in range(hint.row_count)]
        assert lines[0] == f"no session bound: agent → {app.url}/v1" and "d" in lines[1]
        # The script row selected: the call pane says what the script is, not "select a call".
        output = app.call_pane.query_one("#output", RenderedLines)
        assert app.scripts_view.selected() == (0, None)
        assert app.call_pane.border_title == "Script [0] sample-basic-chat"
        text = output.text
        assert "2 calls: select one (↓)" in text and "session.jsonl (v0/v1)" in text
        assert "bound to   no live session yet" in text
        await pilot.press("down")
        assert "call #0 of [0] sample-basic-chat" in output.text


@pytest.mark.parametrize("size", [(120, 40), (160, 45)])
async def test_the_scripts_pane_gets_the_width_its_summaries_need(size: tuple[int, int]) -> None:
    app = make_app(BASIC, serve=False)
    async with app.run_test(size=size) as pilot:
        await app.ready.wait()
        await pilot.pause()
        view = app.scripts_view
        # 120 columns stack the panes (side by side, the scripts would get 60 columns and the
        # summaries 10 characters); from SIDE_BY_SIDE on, the pane is as wide as a call row.
        assert view.region.width == (size[0] if size[0] < SIDE_BY_SIDE
                                     else min(ROW_WIDTH + 2, size[0] * 55 // 100))
        painted = view.render_line(2).text
        assert "The workspace has README.md and src." in painted, painted
