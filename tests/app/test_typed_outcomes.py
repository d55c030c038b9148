"""Behaviour on typed values, never on wording: an editor that ran but failed still reloads
while one that never started does not (``EditorProblem.started``); a port that cannot be had
is a ``CannotListenError`` from every server (replay and recorder); a recording says its own
port (record mode hands it to the replay server); the event log words the pace an event
carries, not the text it was described in."""

from __future__ import annotations

import contextlib
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from dsh_replay_tui.app import ReplayApp

from replay_engine import CannotListenError, Pace, ReplayEngine, record_scenario
from replay_engine import events as ev
from replay_engine.server import serve_scenario
from replay_engine.server.listen import cannot_listen
from tests.app.apptools import copy_sample, make_app, until
from tests.conftest import SAMPLES
from tests.unit.enginetools import sidecar_bytes

pytestmark = pytest.mark.anyio
SIDE = "replay.override.json"
HANG = sidecar_bytes({"patches": [{"at": 0, "entry": {"kind": "hang"}}]})


def failing_editor(tmp_path: Path) -> Path:
    """An editor that writes a hang sidecar, then exits 1."""
    script = tmp_path / "bin" / "vi"
    script.parent.mkdir(exist_ok=True)
    script.write_text(f"#!{sys.executable}\nimport pathlib, sys\n"
                      f"pathlib.Path(sys.argv[-1]).write_bytes({HANG!r})\nsys.exit(1)\n",
                      encoding="utf-8")
    script.chmod(0o755)
    return script


def hand_over_allowed(app: ReplayApp, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pilot's driver cannot suspend; the hand-over becomes a no-op, the rest is real."""
    monkeypatch.setattr(app, "suspend", contextlib.nullcontext)


async def test_an_editor_that_ran_and_failed_still_reloads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = copy_sample(SAMPLES, "basic-chat", tmp_path)
    editor = failing_editor(tmp_path)
    monkeypatch.setenv("VISUAL", str(editor))
    app = make_app(root)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        hand_over_allowed(app, monkeypatch)
        await pilot.press("E")
        await until(app, lambda: app.engine.scripts[0].entries[0].entry.kind == "hang",
                    "the reload after the failed editor")
        assert any(f"E: {editor} exited with status 1" in line for line in app.live_pane.lines)


async def test_an_editor_that_never_started_reloads_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = copy_sample(SAMPLES, "basic-chat", tmp_path)
    monkeypatch.setenv("VISUAL", str(tmp_path / "no-such-editor"))
    app = make_app(root)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        loaded = app.scenario
        hand_over_allowed(app, monkeypatch)
        await pilot.press("E")
        await until(app, lambda: any("E: cannot run" in x for x in app.live_pane.lines))
        await app.workers.wait_for_complete()
        assert app.scenario is loaded
        assert not any("reload" in line for line in app.live_pane.lines)


@contextlib.contextmanager
def busy_port() -> Iterator[int]:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield int(taken.getsockname()[1])


async def test_a_busy_port_is_a_cannot_listen_error_from_both_servers(tmp_path: Path) -> None:
    with busy_port() as port:
        with pytest.raises(CannotListenError) as served:
            async with serve_scenario(SAMPLES / "basic-chat", port=port):
                pass
        with pytest.raises(CannotListenError) as recorded:
            async with record_scenario(tmp_path / "rec", "http://127.0.0.1:9", port=port):
                pass
    said = cannot_listen("127.0.0.1", port, OSError(98, "Address already in use")).message
    assert served.value.message.split(" (")[0] == said.split(" (")[0]
    assert recorded.value.message == served.value.message


async def test_a_recording_names_its_port(tmp_path: Path) -> None:
    async with record_scenario(tmp_path / "rec", "http://127.0.0.1:9", port=0) as recording:
        assert recording.port == urlsplit(recording.url).port != 0


@pytest.mark.parametrize("pace", [Pace(), Pace("fixed", 20), Pace("recorded", 5, 2.5)])
def test_the_event_log_words_the_pace_the_event_carries(pace: Pace) -> None:
    from dsh_replay_tui.headless.eventlog import format_event
    from dsh_replay_tui.headless.header import pace_label

    engine = ReplayEngine([])
    seen: list[ev.EngineEvent] = []
    engine.subscribe(seen.append, chunks=False)
    engine.set_pace(pace)
    changed = seen[-1]
    assert isinstance(changed, ev.SettingsChanged) and changed.pace == pace
    line = format_event(changed, [])
    assert line is not None and f", pace {pace_label(pace)}, " in line.plain
