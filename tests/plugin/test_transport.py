"""The plugin's in-process transport (``dsh_replay.http_client()``): real openai SDK clients,
sync and async, served by the replay app on the plugin's server loop with no socket, and
answered exactly as over one."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from replay_engine.engine import ReplayEngine
from replay_engine.engine import events as ev
from replay_engine.server.frontdoor import internal_error_body
from replay_engine.testing.servers import ServerPool
from replay_engine.testing.transport import async_http_client, default_module, http_client
from tests.conftest import SAMPLES

ANSWER = "The workspace has README.md and src. Hello!"
QUESTIONS = ("What files are in the workspace?", "Say hello.")
WAIT_S = 30.0
"""Bound on waiting for an engine event (they come at once; this only stops a broken test)."""


@pytest.fixture
def pool() -> Iterator[ServerPool]:
    """The servers of a pytest process, as the plugin keeps them."""
    servers = ServerPool()
    yield servers
    servers.close()


def base(pool: ServerPool, scenario: str, run: str) -> str:
    return f"{pool.server(SAMPLES / scenario).url}/runs/{run}/v1"


def sync_sdk(pool: ServerPool, scenario: str, run: str, **options: Any) -> openai.OpenAI:
    client = http_client(pool.app_at, lambda: pool.loop.loop)
    return openai.OpenAI(base_url=base(pool, scenario, run), api_key="k", max_retries=0,
                         http_client=client, **options)


def async_sdk(pool: ServerPool, scenario: str, run: str) -> openai.AsyncOpenAI:
    client = async_http_client(pool.app_at, lambda: pool.loop.loop)
    return openai.AsyncOpenAI(base_url=base(pool, scenario, run), api_key="k", max_retries=0,
                              http_client=client)


def ask(question: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": question}]


def engine_of(pool: ServerPool, scenario: str) -> ReplayEngine:
    return pool.server(SAMPLES / scenario).engine


def outcomes(pool: ServerPool, scenario: str, run: str) -> list[str]:
    engine = engine_of(pool, scenario)
    return pool.loop.call(lambda: [record.outcome for record in engine.journal(run)])


def watch(pool: ServerPool, scenario: str, kind: type[ev.EngineEvent], run: str,
          then: Callable[[], None]) -> Callable[[], None]:
    """Call ``then`` (on the server loop) when the engine emits ``kind`` for ``run``."""
    engine = engine_of(pool, scenario)

    def observe(event: ev.EngineEvent) -> None:
        if isinstance(event, kind) and getattr(event, "run", None) == run:
            then()

    return pool.loop.call(lambda: engine.subscribe(observe, chunks=False))


def normalized(body: bytes, run: str) -> bytes:
    """A body without what differs between two replays of one call (random ids, the clock's
    second, the run)."""
    body = re.sub(rb'"created":[0-9]+', b'"created":T', body)
    return re.sub(rb"chatcmpl-[0-9a-f]+", b"chatcmpl-ID", body).replace(run.encode(), b"RUN")


@pytest.mark.parametrize("scenario", ["basic-chat", "patch-throw-append"])
@pytest.mark.parametrize("stream", [True, False])
def test_every_answer_is_what_the_socket_serves(pool: ServerPool, scenario: str,
                                                stream: bool) -> None:
    inproc = http_client(pool.app_at, lambda: pool.loop.loop)
    answers: dict[str, list[tuple[int, str | None, str | None, bytes]]] = {}
    with httpx.Client() as sock, inproc:
        for name, client in (("socket", sock), ("in-process", inproc)):
            run = f"{name}-{stream}"
            answers[name] = []
            for _ in range(4):  # the recorded calls, then past the end (refused)
                reply = client.post(f"{base(pool, scenario, run)}/chat/completions",
                                    json={"model": "m", "stream": stream, "messages": ask("hi")})
                answers[name].append((reply.status_code, reply.headers.get("content-type"),
                                      reply.headers.get("x-should-retry"),
                                      normalized(reply.content, run)))
    assert answers["in-process"] == answers["socket"]
    assert [status for status, *_ in answers["socket"]][-1] == 409


@pytest.mark.parametrize("stream", [True, False])
def test_the_sync_sdk_replays_both_calls(pool: ServerPool, stream: bool) -> None:
    client = sync_sdk(pool, "basic-chat", "sync")
    for question in QUESTIONS:
        if stream:
            chunks = client.chat.completions.create(model="m", stream=True, messages=ask(question))
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        else:
            reply = client.chat.completions.create(model="m", messages=ask(question))
            text = reply.choices[0].message.content or ""
    assert text == ANSWER
    assert outcomes(pool, "basic-chat", "sync") == ["finished", "finished"]
    engine = engine_of(pool, "basic-chat")
    assert pool.loop.call(lambda: engine.verdict_problems("sync")) == []


@pytest.mark.parametrize("stream", [True, False])
def test_the_async_sdk_replays_both_calls(pool: ServerPool, stream: bool) -> None:
    client = async_sdk(pool, "basic-chat", "async")

    async def agent() -> str:
        text = ""
        for question in QUESTIONS:
            if stream:
                chunks = await client.chat.completions.create(model="m", stream=True,
                                                              messages=ask(question))
                text = "".join([c.choices[0].delta.content or "" async for c in chunks
                                if c.choices])
            else:
                reply = await client.chat.completions.create(model="m", messages=ask(question))
                text = reply.choices[0].message.content or ""
        await client.close()
        return text

    assert asyncio.run(agent()) == ANSWER
    assert outcomes(pool, "basic-chat", "async") == ["finished", "finished"]


@pytest.mark.parametrize("name", ["httpx", "httpx2"])
def test_clients_of_either_httpx_are_served(pool: ServerPool, name: str) -> None:
    module = pytest.importorskip(name)
    http = http_client(pool.app_at, lambda: pool.loop.loop, module)
    assert isinstance(http, module.Client)
    client = openai.OpenAI(base_url=base(pool, "basic-chat", name), api_key="k", max_retries=0,
                           http_client=http)
    for question in QUESTIONS:
        chunks = client.chat.completions.create(model="m", stream=True, messages=ask(question))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == ANSWER


def test_the_default_client_is_httpx2_where_installed() -> None:
    try:
        import httpx2
    except ImportError:
        assert default_module() is httpx
    else:
        assert default_module() is httpx2


def test_a_scripted_throw_reaches_the_sdk(pool: ServerPool) -> None:
    client = sync_sdk(pool, "patch-throw-append", "throw")
    client.chat.completions.create(model="m", messages=ask("Read config.toml"))
    with pytest.raises(openai.RateLimitError, match="rate limited, retry later"):
        client.chat.completions.create(model="m", messages=ask("again"))
    streamed = sync_sdk(pool, "patch-throw-append", "throw-streamed")
    streamed.chat.completions.create(model="m", messages=ask("Read config.toml"))
    chunks = streamed.chat.completions.create(model="m", stream=True, messages=ask("again"))
    with pytest.raises(openai.APIError, match="rate limited, retry later"):
        for _ in chunks:
            pass
    assert outcomes(pool, "patch-throw-append", "throw-streamed") == ["finished", "failed"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_hang_ends_cancelled_when_the_sync_client_times_out(pool: ServerPool,
                                                               stream: bool) -> None:
    # not streamed, the timeout hits the wait for the head; streamed, the wait for the body
    run = f"hang-{stream}"
    cancelled = threading.Event()
    watch(pool, "hang-ready-file", ev.CallCancelled, run, cancelled.set)
    client = sync_sdk(pool, "hang-ready-file", run, timeout=0.2)  # the hang never answers
    client.chat.completions.create(model="m", messages=ask("Start"))
    with pytest.raises(openai.APITimeoutError):
        reply = client.chat.completions.create(model="m", stream=stream, messages=ask("Go on"))
        for _ in reply if stream else ():
            pass
    assert cancelled.wait(WAIT_S)
    assert outcomes(pool, "hang-ready-file", run) == ["finished", "cancelled"]


def test_a_hang_ends_cancelled_when_the_async_task_is_cancelled(pool: ServerPool) -> None:
    client = async_sdk(pool, "hang-ready-file", "hang-async")
    cancelled = threading.Event()
    watch(pool, "hang-ready-file", ev.CallCancelled, "hang-async", cancelled.set)

    async def agent() -> None:
        mine = asyncio.get_running_loop()
        waiting = mine.create_future()
        watch(pool, "hang-ready-file", ev.HangWaiting, "hang-async",
              lambda: mine.call_soon_threadsafe(waiting.set_result, None))
        await client.chat.completions.create(model="m", messages=ask("Start"))

        async def read_on() -> None:  # streamed: the head comes, the body waits for ever
            async for _ in await client.chat.completions.create(model="m", stream=True,
                                                                messages=ask("Go on")):
                pass

        call = asyncio.create_task(read_on())
        await waiting
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    asyncio.run(agent())
    assert cancelled.wait(WAIT_S)
    assert outcomes(pool, "hang-ready-file", "hang-async") == ["finished", "cancelled"]


def test_other_addresses_go_over_the_network(pool: ServerPool) -> None:
    url = base(pool, "basic-chat", "network")
    with http_client(lambda host, port: None, lambda: pool.loop.loop) as client:
        reply = client.post(f"{url}/chat/completions", json={"model": "m", "messages": ask("hi")})
    assert reply.status_code == 200
    assert outcomes(pool, "basic-chat", "network") == ["finished"]


async def fails_at_once(scope: Any, receive: Any, send: Any) -> None:
    raise RuntimeError("broken before answering")


async def fails_mid_body(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
    raise RuntimeError("broken mid-answer")


def test_an_app_failure_is_a_500_or_a_broken_answer_as_over_a_socket(pool: ServerPool) -> None:
    loop = pool.loop  # started here: no server is needed for these apps
    with http_client(lambda host, port: fails_at_once, lambda: loop.loop) as client:
        reply = client.get("http://127.0.0.1:1/anything")
    assert reply.status_code == 500
    assert reply.content == internal_error_body()
    with http_client(lambda host, port: fails_mid_body, lambda: loop.loop) as client:
        with client.stream("GET", "http://127.0.0.1:1/anything") as streamed:
            assert streamed.status_code == 200
            with pytest.raises(default_module().RemoteProtocolError,
                               match="ended the answer early"):
                streamed.read()


PROJECT_TEST = '''
import asyncio
import openai
import pytest

QUESTIONS = ("What files are in the workspace?", "Say hello.")


def ask(question):
    return [{"role": "user", "content": question}]


@pytest.mark.dsh_replay("scenarios/basic-chat")
def test_sync_streamed(dsh_replay):
    client = openai.OpenAI(max_retries=0, http_client=dsh_replay.http_client())
    for question in QUESTIONS:
        chunks = client.chat.completions.create(model="m", stream=True, messages=ask(question))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.endswith("Hello!")


@pytest.mark.dsh_replay("scenarios/basic-chat")
def test_async_not_streamed(dsh_replay):
    async def agent():
        client = openai.AsyncOpenAI(max_retries=0, http_client=dsh_replay.async_http_client())
        for question in QUESTIONS:
            reply = await client.chat.completions.create(model="m", messages=ask(question))
        return reply.choices[0].message.content

    assert asyncio.run(agent()).endswith("Hello!")


@pytest.mark.dsh_replay("scenarios/basic-chat")
def test_stops_after_one_call(dsh_replay):
    client = openai.OpenAI(max_retries=0, http_client=dsh_replay.http_client())
    client.chat.completions.create(model="m", messages=ask(QUESTIONS[0]))


@pytest.mark.dsh_replay("scenarios/basic-chat")
def test_one_call_too_many(dsh_replay):
    client = openai.OpenAI(max_retries=0, http_client=dsh_replay.http_client())
    for question in (*QUESTIONS, "And again?"):
        try:
            client.chat.completions.create(model="m", messages=ask(question))
        except openai.ConflictError:
            pass  # the agent swallows it: the verdict must not
'''


def test_the_fixture_clients_replay_and_keep_the_verdict(pytester: pytest.Pytester,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makefile(".ini", pytest="[pytest]\naddopts = -p no:cacheprovider\n")
    scenarios = pytester.path / "scenarios"
    scenarios.mkdir()
    (scenarios / "basic-chat").symlink_to(Path(SAMPLES / "basic-chat"))
    pytester.makepyfile(test_clients=PROJECT_TEST)
    result = pytester.runpytest_subprocess("-p", "replay_engine.testing.pytest_plugin", "-rA",
                                           timeout=110)
    result.assert_outcomes(passed=2, failed=2)
    text = result.stdout.str()
    stopped = text[text.index("_ test_stops_after_one_call _"):]
    assert "not consumed" in stopped.split("\n___")[0]
    too_many = text[text.index("_ test_one_call_too_many _"):]
    assert "script exhausted" in too_many.split("\n___")[0]
