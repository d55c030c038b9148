"""The first load shows the primary's first calls while it still reads the log: marked as
loading, with nothing served until the whole scenario loaded; the scripts installed are then
exactly ``load_scenario``'s, and an error later in the log takes the early rows away.

The loading thread is held after its first progress by a gate the test opens (no timing)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dsh_replay_tui.headless.loading as loading
import httpx
import pytest

from replay_engine import LoadProgress, load_scenario
from replay_engine.scenario.derive_fast import PROGRESS_BLOCK
from tests.app.apptools import LIMIT_S, make_app

pytestmark = pytest.mark.anyio
CALLS = 4000
PAD = "x" * 400
"""Each call's text: the log is then several times the loader's first block."""


def write_log(path: Path, calls: int, *, broken_at: int | None = None) -> None:
    """A v0 log of ``calls`` one-chunk calls (plus finish); ``broken_at``: that call's chunk is
    not an object, an error far past the first block."""
    lines = [{"type": "session", "version": 0, "id": "big", "createdAt": 1767225600000}]
    for i in range(calls):
        data = {"turn": i + 1, "step": 1}
        chunk: Any = ({"type": "text-delta", "index": 0, "text": f"call {i} {PAD}"}
                      if i != broken_at else "not a chunk")
        lines.append({"type": "assistant/chunk", "seq": 2 * i, "time": 1767225600000 + i,
                      "data": {**data, "chunk": chunk}})
        lines.append({"type": "assistant/chunk", "seq": 2 * i + 1, "time": 1767225600000 + i,
                      "data": {**data, "chunk": {"type": "finish", "reason": {"kind": "stop"}}}})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    assert path.stat().st_size > 2 * PROGRESS_BLOCK // 4, "the log must span several blocks"


class Gate:
    """Holds the loading thread after its first progress report until ``release``."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.reports: list[LoadProgress] = []

    def release(self) -> None:
        self.released.set()

    def load(self, root: Any, *, progress: Any = None) -> Any:
        def told(report: LoadProgress) -> None:
            self.reports.append(report)
            progress(report)
            assert self.released.wait(LIMIT_S), "the test never opened the gate"

        return load_scenario(root, progress=told if progress is not None else None)


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    held = Gate()
    monkeypatch.setattr(loading, "load_scenario", held.load)
    try:
        yield held
    finally:
        held.release()  # a failed test must not leave the loading thread waiting


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_first_rows_show_before_the_load_ends_and_nothing_is_served(
        tmp_path: Path, gate: Gate) -> None:
    root = tmp_path / "big"
    write_log(root / "session.jsonl", CALLS)
    port = free_port()
    app = make_app(root, port=port)
    async with app.run_test(size=(160, 40)):
        await app.first_rows.wait()
        shown = app.scripts_view
        assert 0 < len(shown.scripts[0].entries) < CALLS
        header = shown.row_text(0).plain
        assert "loading… 1 MB of" in header, header
        assert "#0" in shown.row_text(1).plain
        # Nothing is served while the log is read: the engine holds no script, no server listens.
        assert not app.ready.is_set() and app.scenario is None and app.engine.scripts == []
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            with pytest.raises(httpx.ConnectError):
                await http.post("/v1/chat/completions", json={"model": "replay", "messages": []})
        gate.release()
        await app.ready.wait()
        assert app.load_error is None and app.scenario is not None
        assert app.url == f"http://127.0.0.1:{port}"
        expected = load_scenario(root)
        assert app.scenario.scripts == expected.scripts
        assert app.scenario.headers == expected.headers
        assert shown.scripts == expected.scripts and shown.loading_note is None
        assert "loading" not in shown.row_text(0).plain
        assert len(gate.reports) > 1 and gate.reports[-1].done == gate.reports[-1].total


async def test_an_error_later_in_the_log_replaces_the_early_rows_with_the_banner(
        tmp_path: Path, gate: Gate) -> None:
    root = tmp_path / "broken"
    write_log(root / "session.jsonl", CALLS, broken_at=CALLS - 10)
    app = make_app(root, serve=False)
    async with app.run_test(size=(160, 40)):
        await app.first_rows.wait()
        assert app.scripts_view.row_count > 1 and app.scripts_view.loading_note is not None
        gate.release()
        await app.ready.wait()
        assert app.scenario is None and app.load_error is not None
        assert app.banner.showing
        assert app.scripts_view.row_count == 0 and app.scripts_view.loading_note is None
        assert app.engine.not_loaded is app.load_error
