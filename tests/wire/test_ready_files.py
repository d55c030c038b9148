"""Hang readyFiles over the wire: a FIFO at the path cannot freeze the server, paths stay in
--ready-dir, and the agent's request text never chooses where a file is created."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.wire.wire_helpers import text_entry, write_scenario

MSGS = [{"role": "user", "content": "please use ../../../tmp/owned"}]


def _serve(scenario: Path, ready: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "replay_engine.cli", "serve", str(scenario),
                             "--port", "0", "--ready-dir", str(ready)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def _call(url: str, session: str) -> httpx.Response:
    return httpx.post(url + "/replay/v1/stream", json={"sessionId": session, "messages": MSGS},
                      timeout=10)


def _outcomes(url: str) -> list[tuple[str, str | None]]:
    calls = httpx.get(url + "/replay/v1/journal", timeout=10).json()["calls"]
    return [(c["outcome"], c["code"]) for c in calls]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_ready_file_fails_the_call_and_the_server_keeps_serving(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    ready.mkdir()
    os.mkfifo(ready / "pipe")
    scenario = write_scenario(tmp_path / "sc", [{"kind": "hang", "readyFile": "pipe"},
                                                text_entry("still serving")])
    proc, url = _serve(scenario, ready)
    try:
        _call(url, "s")  # the prefix, then the marker is refused
        after = _call(url, "s")
        assert after.status_code == 200 and "still serving" in after.text
        assert _outcomes(url) == [("failed", "READY_FILE"), ("finished", None)]
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "not a regular file" in err


@pytest.mark.parametrize("name", [  # '..' and absolute names are refused at load already
    "link/outside.marker",
    "{{fromRequest:use (\\S+)}}",
    "m-{{fromRequest:(owned)}}",
])
def test_ready_files_stay_inside_the_ready_dir(tmp_path: Path, name: str) -> None:
    ready = tmp_path / "ready"
    ready.mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (ready / "link").symlink_to(outside)
    name = name.replace("ABS", str(outside / "outside.marker"))
    scenario = write_scenario(tmp_path / "sc", [{"kind": "hang", "readyFile": name},
                                                {"kind": "hang", "readyFile": "fine/ok.marker"}])
    proc, url = _serve(scenario, ready)
    try:
        _call(url, "s")
        with httpx.stream("POST", url + "/replay/v1/stream", timeout=10,
                          json={"sessionId": "s", "messages": MSGS}) as hanging:
            assert hanging.status_code == 200
            lines = hanging.iter_lines()
            assert [next(lines), next(lines)]  # the prefix; the marker comes right after it
            deadline = time.monotonic() + 10
            while not (ready / "fine" / "ok.marker").exists():
                assert time.monotonic() < deadline, "the hang never created its readyFile"
                time.sleep(0.01)
        assert _outcomes(url)[0] == ("failed", "READY_FILE")
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert list(outside.iterdir()) == []
    assert not (tmp_path / "outside.marker").exists()
    assert not Path("/tmp/owned").exists()
    assert sorted(p.name for p in ready.iterdir()) == ["fine", "link"]
