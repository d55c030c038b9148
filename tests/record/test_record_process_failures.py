"""``dsh-replay record`` failing as a process: a file-size limit stops it with exit status 1
and the error named, leaving logs that ``validate`` reads; a second recorder on the same
directory is refused at start, naming the one that holds it (the pytest plugin's record mode
too, without telling to record what is being recorded)."""

from __future__ import annotations

import asyncio
import resource
import signal
import sys
from pathlib import Path

import pytest

from replay_engine.record import ScenarioRecorder
from tests.record.fakeupstream import FakeUpstream, text_answer
from tests.record.recordcheck import logged_calls, post

pytestmark = pytest.mark.anyio
LIMIT = 6000
"""Bytes any file of the recorder process may grow to (RLIMIT_FSIZE)."""


async def _recorder(target: Path, upstream: str, *, limit: int | None = None
                    ) -> tuple[asyncio.subprocess.Process, str]:
    def limited() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "replay_engine.cli", "record", str(target), "--upstream", upstream,
        "--port", "0", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        preexec_fn=limited)
    assert proc.stdout is not None
    url = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().strip()
    return proc, url


async def _finish(proc: asyncio.subprocess.Process) -> tuple[int, str, str]:
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def _validate(target: Path) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "replay_engine.cli", "validate", str(target),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode()


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
async def test_a_file_size_limit_stops_the_recording_with_status_1(tmp_path: Path) -> None:
    target = tmp_path / "rec"
    answer = "a long answer " * 40
    async with FakeUpstream(lambda head, body: text_answer(answer)) as upstream:
        proc, url = await _recorder(target, upstream.url, limit=LIMIT)
        try:
            statuses = []
            for n in range(40):
                got = await post(url + "/v1/chat/completions", {
                    "model": "m", "stream": True,
                    "messages": [{"role": "user", "content": f"call {n}"}]})
                statuses.append(got.status)
                if got.status != 200:
                    break
            code, out, err = await _finish(proc)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    assert code == 1, (out, err)
    assert "Traceback" not in err + out
    assert "[RECORD_WRITE]" in err and "File too large" in err and "session.jsonl" in err
    assert "the recording stopped early" in out
    assert statuses[-1] in (503, None) and statuses.count(200) >= 2
    log = target / "session.jsonl"
    assert log.read_bytes().endswith(b"\n") and log.stat().st_size <= LIMIT
    status, report = await _validate(target)
    assert status == 0, report
    assert len(logged_calls(target)) == statuses.count(200) - 1  # the one that did not fit
    assert len(upstream.requests) == statuses.count(200)


async def test_a_second_recorder_on_the_directory_is_refused_naming_the_first(
        tmp_path: Path) -> None:
    target = tmp_path / "rec"
    async with FakeUpstream(lambda head, body: text_answer("hi")) as upstream:
        first, url = await _recorder(target, upstream.url)
        try:
            second = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "replay_engine.cli", "record", str(target), "--upstream",
                upstream.url, "--port", "0", "--force", stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE)
            code, out, err = await _finish(second)
            assert code == 1 and out == "", (out, err)
            assert "[RECORDING_LOCKED]" in err and f"pid {first.pid}" in err
            assert (await post(url + "/v1/chat/completions", {"messages": []})).status == 200
            first.send_signal(signal.SIGTERM)
            code, out, err = await _finish(first)
        finally:
            if first.returncode is None:
                first.kill()
                await first.wait()
    assert code == 0, err
    assert len(logged_calls(target)) == 1


def test_the_pytest_plugin_names_the_recorder_holding_a_directory(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_rec='''
import pytest

@pytest.mark.dsh_replay("scenarios/fresh")
def test_fresh(dsh_replay):
    pass
''')
    holder = ScenarioRecorder(pytester.path / "scenarios" / "fresh")  # another recording
    try:
        result = pytester.runpytest_subprocess(
            "-p", "replay_engine.testing.pytest_plugin", "-p", "no:cacheprovider",
            "--dsh-replay-record=missing", "--dsh-replay-upstream", "http://127.0.0.1:9",
            timeout=110)
    finally:
        holder.close()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*cannot serve scenarios/fresh: [[]RECORDING_LOCKED[]]*pid*"])
    assert "record it first" not in result.stdout.str()  # it was being recorded
