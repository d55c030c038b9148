"""The ``dsh-replay record`` process: killed, it leaves whole calls; stopped, it finishes."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from pathlib import Path

import pytest

from replay_engine.cli.dispatch import main
from replay_engine.engine.events import HangWaiting
from replay_engine.server import serve_scenario
from tests.record.recordtools import scripts_json
from tests.wire.wire_helpers import EngineWatch, sdk_stream, text_entry, write_scenario

pytestmark = pytest.mark.anyio

PRIMARY = [text_entry("first answer", parts=2), text_entry("second answer here", parts=3),
           {"kind": "hang"}]
CHILD = [text_entry("child answer", parts=2)]


async def _run_until_hanging(tmp_path: Path, sig: signal.Signals) -> tuple[int, str, Path]:
    """Record two primary calls and a child's, then send ``sig`` while the third streams."""
    import openai

    source = write_scenario(tmp_path / "source", PRIMARY, children=[CHILD])
    target = tmp_path / "recorded"
    async with serve_scenario(source) as upstream:
        watch = EngineWatch(upstream.engine)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "replay_engine.cli", "record", str(target), "--upstream",
            upstream.url, "--port", "0", stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        try:
            assert proc.stdout is not None
            url = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().strip()
            assert url.startswith("http://127.0.0.1:"), url
            client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="sk-x", max_retries=0)
            await sdk_stream(client, None)
            await sdk_stream(client, "child-1")
            await sdk_stream(client, None, [{"role": "user", "content": "again"}])
            hanging = asyncio.create_task(sdk_stream(client, None, [{"role": "user",
                                                                     "content": "third"}]))
            await watch.wait_for(HangWaiting)
            proc.send_signal(sig)
            out, _ = await asyncio.wait_for(proc.communicate(), 30)
            with contextlib.suppress(Exception):
                await hanging
            await client.close()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), target


async def _validate(target: Path) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "replay_engine.cli", "validate", str(target),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode()


async def test_sigkill_leaves_logs_validate_reads_up_to_the_last_whole_call(tmp_path: Path) -> None:
    code, _, target = await _run_until_hanging(tmp_path, signal.SIGKILL)
    assert code == -signal.SIGKILL
    for log in target.glob("session*.jsonl"):
        assert log.read_bytes().endswith(b"\n")
    status, out = await _validate(target)
    assert status == 0, out
    assert scripts_json(target) == [PRIMARY[:2], CHILD]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_stop_finishes_the_logs_and_drops_the_call_in_flight(tmp_path: Path,
                                                                   sig: signal.Signals) -> None:
    code, out, target = await _run_until_hanging(tmp_path, sig)
    assert code == 0, out
    assert "recorded 3 call(s) of 2 session(s)" in out
    assert "1 call(s) still streaming at stop were not recorded" in out
    status, report = await _validate(target)
    assert status == 0, report
    assert scripts_json(target) == [PRIMARY[:2], CHILD]


def test_refuses_a_directory_holding_a_scenario(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    target = write_scenario(tmp_path / "old", [text_entry("old")])
    before = {p.name: p.read_bytes() for p in target.iterdir()}
    assert main(["record", str(target), "--upstream", "http://127.0.0.1:9"]) == 1
    err = capsys.readouterr().err
    assert "SCENARIO_EXISTS" in err and "already holds a scenario" in err and "--force" in err
    assert {p.name: p.read_bytes() for p in target.iterdir()} == before
    assert main(["record", str(tmp_path / "new"), "--upstream", "ftp://example"]) == 1
    assert "--upstream 'ftp://example'" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()


async def test_force_keeps_the_old_scenario_as_numbered_backups(tmp_path: Path) -> None:
    from replay_engine.record import record_scenario

    target = write_scenario(tmp_path / "old", [text_entry("old")])
    old = {p.name: p.read_bytes() for p in target.iterdir()}
    source = write_scenario(tmp_path / "source", [text_entry("new answer")])
    async with serve_scenario(source) as upstream:
        async with record_scenario(target, upstream.url, force=True) as rec:
            import openai

            client = openai.AsyncOpenAI(base_url=rec.base_url, api_key="sk-x", max_retries=0)
            await sdk_stream(client, None)
            await client.close()
    assert {p.name: p.read_bytes() for p in target.glob("*.bak.*")} == {
        f"{name}.bak.1": data for name, data in old.items()}
    assert not (target / "replay.override.json").exists()
    assert scripts_json(target) == [[text_entry("new answer")]]
    first = (target / "session.jsonl").read_bytes()
    async with serve_scenario(source) as upstream:  # a second re-record never replaces .bak.1
        async with record_scenario(target, upstream.url, force=True):
            pass
    assert (target / "session.jsonl.bak.1").read_bytes() == old["session.jsonl"]
    assert (target / "session.jsonl.bak.2").read_bytes() == first
