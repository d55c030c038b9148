"""Tests as users write them are served in process: each test builds its own openai client
(sync or async) from the base URL the plugin sets, and no socket reaches the replay server;
the answers are byte for byte what the socket serves; ``--dsh-replay-socket`` and the
``dsh_replay_socket`` ini key turn it off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import SAMPLES

PROJECT_TEST = r'''
import asyncio, json, os, re, socket
from pathlib import Path

import httpx
import openai
import pytest

CONNECTS = []
_connect = socket.socket.connect


def connect(self, address):
    CONNECTS.append(address)
    return _connect(self, address)


socket.socket.connect = connect
QUESTIONS = ("What files are in the workspace?", "Say hello.")


def server_port():
    return int(os.environ["OPENAI_BASE_URL"].split(":")[2].split("/")[0])


def note(name, **facts):
    reached = [a for a in CONNECTS if isinstance(a, tuple) and a[1] == server_port()]
    facts["connects"] = len(reached)
    Path(os.environ["OUT"], name + ".json").write_text(json.dumps(facts))


def ask(question):
    return [{"role": "user", "content": question}]


@pytest.mark.dsh_replay("scenarios/basic-chat")
def test_sync_client_of_its_own():
    client = openai.OpenAI(max_retries=0)
    for question in QUESTIONS:
        chunks = client.chat.completions.create(model="m", stream=True, messages=ask(question))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    client.close()
    note("sync", text=text)


@pytest.mark.dsh_replay("scenarios/basic-chat")
def test_async_client_of_its_own():
    async def agent():
        async with openai.AsyncOpenAI(max_retries=0) as client:
            for question in QUESTIONS:
                reply = await client.chat.completions.create(model="m", messages=ask(question))
        return reply.choices[0].message.content

    note("async", text=asyncio.run(agent()))


@pytest.mark.dsh_replay("scenarios/basic-chat")
def test_raw_bytes():
    bodies = []
    with httpx.Client() as http:
        for question in QUESTIONS:
            with http.stream("POST", os.environ["OPENAI_BASE_URL"] + "/chat/completions",
                             json={"model": "m", "stream": True, "messages": ask(question)}) as r:
                raw = b"".join(r.iter_raw())
            head = [r.status_code, sorted((k, v) for k, v in r.headers.items()
                                          # what the socket's framing adds
                                          if k not in ("date", "server", "transfer-encoding"))]
            raw = re.sub(rb'"created":[0-9]+', b'"created":T', raw)  # the clock
            bodies.append([head, re.sub(rb"chatcmpl-[0-9a-f]+", b"chatcmpl-ID", raw).decode()])
    note("raw", bodies=bodies)
'''


def _run(pytester: pytest.Pytester, out: Path, *args: str) -> dict[str, dict[str, object]]:
    out.mkdir()
    result = pytester.runpytest_subprocess("-p", "replay_engine.testing.pytest_plugin",
                                           *args, timeout=110)
    result.assert_outcomes(passed=3)
    return {path.stem: json.loads(path.read_text()) for path in out.glob("*.json")}


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    scenarios = pytester.path / "scenarios"
    scenarios.mkdir()
    (scenarios / "basic-chat").symlink_to(Path(SAMPLES / "basic-chat"))
    pytester.makepyfile(test_own_clients=PROJECT_TEST)
    return pytester


def test_own_clients_are_served_in_process_and_answered_as_over_a_socket(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    project.makefile(".ini", pytest="[pytest]\naddopts = -p no:cacheprovider\n")
    monkeypatch.setenv("OUT", str(project.path / "inproc"))
    inproc = _run(project, project.path / "inproc")
    monkeypatch.setenv("OUT", str(project.path / "socket"))
    sock = _run(project, project.path / "socket", "--dsh-replay-socket")
    assert {name: facts["connects"] for name, facts in inproc.items()} == \
        {"sync": 0, "async": 0, "raw": 0}
    assert all(int(str(facts["connects"])) > 0 for facts in sock.values())
    assert inproc["sync"]["text"] == sock["sync"]["text"] == \
        "The workspace has README.md and src. Hello!"
    assert inproc["async"]["text"] == sock["async"]["text"]
    assert inproc["raw"]["bodies"] == sock["raw"]["bodies"]


def test_the_ini_key_opts_out(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    project.makefile(".ini", pytest="[pytest]\naddopts = -p no:cacheprovider\n"
                     "dsh_replay_socket = true\n")
    monkeypatch.setenv("OUT", str(project.path / "ini"))
    facts = _run(project, project.path / "ini")
    assert all(int(str(f["connects"])) > 0 for f in facts.values())
