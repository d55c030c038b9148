"""Session-format generations in the debugger: which file and generation each script came from,
older generations present and ignored, ``{{session:N}}`` tokens shown with their live id once
bound, and a persisted ``.jsonl.zstd`` session opened directly; each replayed to consumed."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import zstandard
from dsh_replay_tui.app import ReplayApp
from dsh_replay_tui.widgets.rendered_lines import RenderedLines

from replay_engine import run_demo_agent
from tests.app.apptools import make_app, until
from tests.conftest import conformance_gen_dir

pytestmark = pytest.mark.anyio
NARROW = (80, 24)
CORPUS = conformance_gen_dir()
needs_corpus = pytest.mark.skipif(CORPUS is None, reason="the conformance-gen corpus is absent")


def scenario(name: str) -> Path:
    assert CORPUS is not None
    return CORPUS / "scenarios" / name


def rows(app: ReplayApp) -> list[str]:
    view = app.scripts_view
    return [view.row_text(i).plain for i in range(view.row_count)]


async def replay_to_consumed(app: ReplayApp) -> None:
    """The bundled demo agent replays every recorded call; the header says consumed."""
    assert app.url is not None
    result = await run_demo_agent(app.url, out=lambda line: None)
    assert result.ok, result.failures + result.problems
    await until(app, lambda: "consumed ✓" in app.header.text.plain, "consumed")


@needs_corpus
async def test_a_v4_scenario_says_its_file_and_generation_and_replays() -> None:
    app = make_app(scenario("zq0929__sdk__text-turn"))
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        assert "· session.v4.jsonl (v4) ·" in rows(app)[0]
        await pilot.pause()
        facts = app.call_pane.query_one("#output", RenderedLines).text
        assert "session.v4.jsonl (v4)" in facts
        assert not any("ignored older generations" in line for line in app.live_pane.lines)
        await replay_to_consumed(app)
        await pilot.press("q")
    assert app.return_code == 0


@needs_corpus
async def test_older_generations_beside_the_newest_are_said_to_be_ignored() -> None:
    app = make_app(scenario("wangnaiyu__sdk__text-turn"))
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        assert "· session.v5.jsonl (v5) ·" in rows(app)[0]
        note = "ignored older generations: session.v4.jsonl (v4)"
        assert note in app.live_pane.lines
        await pilot.pause()
        facts = app.call_pane.query_one("#output", RenderedLines).text
        assert note in facts.replace("\n", " ")
        await pilot.press("q")


def persisted(log: Path, target: Path, *, batches: int = 2) -> Path:
    """The harness's session store form of ``log``: one zstd frame for the header line, one per
    batch of appended lines, each frame checksummed."""
    lines = log.read_bytes().splitlines(keepends=True)
    compressor = zstandard.ZstdCompressor(write_checksum=True)
    body = lines[1:]
    size = -(-len(body) // batches)
    frames = [compressor.compress(lines[0])]
    frames += [compressor.compress(b"".join(body[i:i + size])) for i in range(0, len(body), size)]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"".join(frames))
    return target


@needs_corpus
@pytest.mark.parametrize("opened", ["file", "directory"])
async def test_a_persisted_session_opens_directly_and_replays(tmp_path: Path, opened: str) -> None:
    store = tmp_path / "sessions" / "one"
    path = persisted(scenario("zq0929__sdk__text-turn") / "session.v4.jsonl",
                     store / "session.v4.jsonl.zstd")
    app = make_app(path if opened == "file" else store)
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        assert app.load_error is None, app.load_error
        assert "· session.v4.jsonl.zstd (v4) ·" in rows(app)[0]
        await replay_to_consumed(app)
        await pilot.press("q")
    assert app.return_code == 0


@needs_corpus
async def test_session_tokens_show_their_live_id_once_bound() -> None:
    app = make_app(scenario("spec-token-after-child-binds"))
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        assert rows(app)[0].startswith("[0] primary {{session:1}} ·")

        async def call(session: str) -> None:
            async with httpx.AsyncClient(base_url=app.url or "", timeout=10) as http:
                body = {"model": "m", "stream": True, "messages": []}
                async with http.stream("POST", "/v1/chat/completions", json=body,
                                       headers={"X-Session-Id": session}) as response:
                    assert response.status_code == 200
                    await response.aread()

        await call("live-parent")
        await until(app, lambda: rows(app)[0].startswith("[0] primary {{session:1}}=live-parent ←"),
                    "the primary's token")
        await pilot.press("down", "down")  # call #1: its tool call names the child's token
        output = app.call_pane.query_one("#output", RenderedLines)
        assert '"agent_id": "{{session:2}}"' in output.text  # the child is not bound yet
        await call("live-child")
        await until(app, lambda: '"agent_id": "{{session:2}}=live-child"' in output.text,
                    "the child's token in the call pane")
        assert any(row.startswith("[1] child {{session:2}}=live-child ←") for row in rows(app))
        assert app.call_pane.border_title == "Call #1 of [0] {{session:1}}=live-parent"
        await call("live-parent")
        await pilot.press("q")
