"""The scripts pane lists every sample scenario exactly as loaded; broken ones open with a banner."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay_engine import summarize_entry
from replay_engine.scenario.loading import load_scenario
from tests.app.apptools import make_app, until
from tests.conftest import SAMPLES

pytestmark = pytest.mark.anyio

GOOD = sorted(p.name for p in SAMPLES.iterdir() if p.is_dir() and not p.name.startswith("broken"))
BROKEN = sorted(p.name for p in SAMPLES.iterdir() if p.is_dir() and p.name.startswith("broken"))


@pytest.mark.parametrize("name", GOOD)
async def test_tree_lists_every_script_and_call_in_bind_order(name: str) -> None:
    scenario = load_scenario(SAMPLES / name)
    app = make_app(SAMPLES / name, serve=False)
    async with app.run_test(size=(160, 40)):
        await app.ready.wait()
        view = app.scripts_view
        rows = [view.row_text(i).plain for i in range(view.row_count)]
        expected_rows = sum(1 + len(s.entries) for s in scenario.scripts)
        assert len(rows) == expected_rows
        row = 0
        for i, script in enumerate(scenario.scripts):
            head = rows[row]
            assert head.startswith(f"[{i}] {'primary' if script.primary else 'child'} ")
            assert script.recorded_id in head
            assert f"createdAt {script.created_at:.0f}" in head
            assert f"seedLength {script.seed_length:g}" in head
            row += 1
            for j, item in enumerate(script.entries):
                info = summarize_entry(item, width=50)
                line = rows[row]
                assert f"#{j} " in line
                for part in (info["kind"], info["origin"], info["finish"] or "-", info["summary"]):
                    assert part in line, (part, line)
                row += 1
        assert not app.banner.showing


@pytest.mark.parametrize("name", BROKEN)
async def test_a_scenario_that_fails_to_load_opens_with_the_error_banner(name: str) -> None:
    app = make_app(SAMPLES / name, serve=False)
    async with app.run_test(size=(160, 40)):
        await app.ready.wait()
        assert app.banner.showing
        assert app.load_error is not None
        banner = app.banner.whole.plain
        assert "Cannot load the scenario" in banner
        assert app.load_error.message in banner
        assert SAMPLES.name in banner  # names the file
        assert app.scripts_view.row_count == 0


async def test_keys_on_a_scenario_that_failed_to_load_do_not_crash() -> None:
    app = make_app(SAMPLES / "broken-json-line")
    async with app.run_test(size=(160, 40)) as pilot:
        await app.ready.wait()
        assert app.url is not None  # still serving (nothing), so a fixed file can be reloaded
        await pilot.press("down", "b", "n", "e", "p", "x", "X", "o", "R", "l", "escape", "q")
    # Nothing was served: never a success (``dsh-replay serve`` exits 1 on such a scenario).
    assert app.return_code == 1
    assert app.return_value is not None
    assert app.return_value.startswith("replay NOT served: the scenario never loaded [")


async def test_a_missing_directory_is_shown_not_raised(tmp_path: Path) -> None:
    app = make_app(tmp_path / "nope", serve=False)
    async with app.run_test(size=(120, 30)):
        await app.ready.wait()
        await until(app, lambda: app.banner.showing, "the banner")
        assert "no such scenario directory" in app.banner.whole.plain


async def test_a_port_in_use_is_shown_in_the_banner() -> None:
    import socket

    from dsh_replay_tui.app import AppOptions, ReplayApp

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        app = ReplayApp(AppOptions(scenario=SAMPLES / "basic-chat", port=port, watch=False))
        async with app.run_test(size=(160, 40)):
            await app.ready.wait()
            assert app.url is None and app.banner.showing
            banner = app.banner.whole.plain
            assert f"Cannot serve on 127.0.0.1:{port}" in banner and "--port" in banner
            assert app.scripts_view.row_count == 3  # the scenario is still shown
