"""Hot reload around the watch's own start and around a replaced directory: a change made while
the watch was not in place yet is loaded once it is; a directory renamed over the scenario (as
safe re-recording does) is loaded and watched in place of the old one; a call still being
written is waited for; a failed sidecar loads again; a torn persisted session warns in Live."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.app.apptools import copy_sample, make_app, until
from tests.conftest import SAMPLES

pytestmark = pytest.mark.anyio


def retext(log: Path, old: str, new: str) -> None:
    log.write_text(log.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")


def answer(app: object) -> str:
    scenario = app.scenario  # type: ignore[attr-defined]
    entry = scenario.scripts[0].entries[1].entry
    return "".join(str(c["text"]) for c in entry.chunks if c["type"] == "text-delta")


async def test_a_change_before_the_watch_was_in_place_is_loaded(tmp_path: Path) -> None:
    root = copy_sample(SAMPLES, "basic-chat", tmp_path)
    app = make_app(root, watch=True)
    loaded = app.loader.on_loaded
    assert loaded is not None

    def first_load_then_edit() -> None:  # the edit lands between the load and the watch
        loaded()
        if "Hello!" in (root / "session.jsonl").read_text(encoding="utf-8"):
            retext(root / "session.jsonl", "Hello!", "Howdy!")

    app.loader.on_loaded = first_load_then_edit
    async with app.run_test(size=(80, 24)):
        await app.watching.wait()
        await until(app, lambda: "Howdy!" in answer(app), "the missed change to load")
        assert any("changed before the watch was in place" in x for x in app.live_pane.lines)


async def test_a_directory_made_during_start_up_is_loaded(tmp_path: Path) -> None:
    root = tmp_path / "later"
    app = make_app(root, watch=True)
    failed = app.loader._load_failed

    def fail_then_appear(error: object, initial: bool) -> None:
        failed(error, initial)  # type: ignore[arg-type]
        if not root.exists():  # made after the first load looked, before the watch began
            shutil.copytree(SAMPLES / "basic-chat", root)

    app.loader._load_failed = fail_then_appear  # type: ignore[method-assign]
    async with app.run_test(size=(80, 24)):
        await app.ready.wait()
        await until(app, lambda: app.scenario is not None, "the directory to load")
        assert not app.banner.showing


async def test_a_directory_renamed_over_the_scenario_is_loaded_and_watched(
        tmp_path: Path) -> None:
    root = copy_sample(SAMPLES, "basic-chat", tmp_path)
    app = make_app(root, watch=True)
    async with app.run_test(size=(80, 24)):
        await app.watching.wait()
        fresh = tmp_path / "basic-chat.new"
        shutil.copytree(root, fresh)
        retext(fresh / "session.jsonl", "Hello!", "Howdy!")
        os.rename(root, tmp_path / "basic-chat.bak")
        os.rename(fresh, root)
        await until(app, lambda: "Howdy!" in answer(app), "the new directory's content")
        retext(root / "session.jsonl", "Howdy!", "Hi again!")  # the new directory is watched
        await until(app, lambda: "Hi again!" in answer(app), "a change in the new directory")


async def test_a_sidecar_that_failed_to_load_is_loaded_again_not_called_already_loaded(
        tmp_path: Path) -> None:
    root = copy_sample(SAMPLES, "broken-sidecar", tmp_path)
    app = make_app(root)
    async with app.run_test(size=(80, 24)):
        await app.ready.wait()
        assert app.scenario is None
        assert not await app.loader.reload_sidecar("edited in vi")  # saved as it was: still fails
        lines = app.live_pane.lines
        assert not any("content already loaded" in x for x in lines), lines
        assert sum("failed [SIDECAR" in x for x in lines) == 2, lines


async def test_a_call_still_being_written_is_waited_for_not_a_failure(tmp_path: Path) -> None:
    root = copy_sample(SAMPLES, "basic-chat", tmp_path)
    log = root / "session.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    app = make_app(root, watch=True)
    async with app.run_test(size=(80, 24)):
        await app.watching.wait()
        log.write_text("".join(lines[:16]), encoding="utf-8")  # call #1 half written
        await until(app, lambda: any("a call is still being written" in x
                                     for x in app.live_pane.lines), "the wait")
        assert not app.banner.showing
        log.write_text("".join(lines), encoding="utf-8")  # the writer finished it
        await until(app, lambda: any(x.startswith("reloaded:") for x in app.live_pane.lines),
                    "the finished call")
        assert not any("failed [UNFINISHED_CALL]" in x for x in app.live_pane.lines)
        assert not app.banner.showing


async def test_a_call_left_unfinished_is_a_failure_once_the_writer_stopped(
        tmp_path: Path) -> None:
    root = copy_sample(SAMPLES, "basic-chat", tmp_path)
    log = root / "session.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    app = make_app(root, watch=True)
    async with app.run_test(size=(80, 24)):
        await app.watching.wait()
        log.write_text("".join(lines[:16]), encoding="utf-8")
        await until(app, lambda: any("failed [UNFINISHED_CALL]" in x
                                     for x in app.live_pane.lines), "the failure")
        assert app.banner.showing
        assert any("a call is still being written" in x for x in app.live_pane.lines)


async def test_a_torn_persisted_session_loads_with_its_warning_in_live(tmp_path: Path) -> None:
    from tests.unit.test_persisted_sessions import HEADER, _call, _frame, _store

    whole = [_frame(HEADER), _frame(_call("kept", 1))]
    _store(tmp_path / "store", [*whole, _frame(_call("lost", 2))[:-12]])
    app = make_app(tmp_path / "store")
    async with app.run_test(size=(80, 24)):
        await app.ready.wait()
        assert app.scenario is not None and app.scenario.warnings
        warned = [x for x in app.live_pane.lines if x.startswith("warning: ")]
        assert warned == [f"warning: {app.scenario.warnings[0]}"]
        assert f"at byte {sum(map(len, whole))}" in warned[0] and "torn" in warned[0]
