"""What an agent asks besides model calls (the ends of docs/format.md#wire-openai-chat and
#wire-responses), over a real socket with the openai SDK: the model list and lookup without a
catalog (any id answered, the models of model calls listed) and with one (unchanged), and
``GET /v1/responses/{id}`` for the responses a run served, while
``previous_response_id`` is accepted and serving stays positional."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from replay_engine import ProviderConfig, ReplayEngine, load_scenario
from replay_engine.models import ModelConfig
from replay_engine.server import ReplayServer, serve_scenario
from tests.conftest import conformance_dir
from tests.wire.wire_helpers import text_entry, write_scenario

pytestmark = pytest.mark.anyio

CORPUS = conformance_dir()
needs_corpus = pytest.mark.skipif(CORPUS is None, reason="conformance corpus absent")
TOOL_LOOP = "Aurora__examples__acp-agent__tests__snapshots__parallel-tool-calls"
"""Two parallel function calls, then the answer that reads their results."""


def _client(url: str, prefix: str = "") -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{url}{prefix}/v1", api_key="any", max_retries=0)


@needs_corpus
async def test_without_a_catalog_any_model_is_answered_and_named_ones_are_listed() -> None:
    assert CORPUS is not None
    async with serve_scenario(CORPUS / "scenarios" / TOOL_LOOP) as server:
        client = _client(server.url)
        assert [m.id for m in (await client.models.list()).data] == ["replay"]
        checked = await client.models.retrieve("deepseek-chat")  # an agent checking its model
        assert (checked.id, checked.owned_by) == ("deepseek-chat", "replay")
        await client.chat.completions.create(model="deepseek-v4-flash", messages=[])
        async with httpx.AsyncClient(base_url=server.url) as http:  # another dialect, a run
            made = await http.post("/runs/r/v1/messages", json={"model": "claude-x", "messages": [],
                                                                  "max_tokens": 9})
            listed = (await http.get("/runs/r/sessions/a/v1/models")).json()
            nested = await http.get("/sessions/a/v1/models/org/model-1")
        assert made.status_code == 200
        # looked up is answered, not listed: only the model calls' models are
        assert [m["id"] for m in listed["data"]] == ["replay", "deepseek-v4-flash", "claude-x"]
        assert nested.json() == {"id": "org/model-1", "object": "model", "created": 0,
                                 "owned_by": "replay"}
        await client.close()


async def test_with_a_catalog_models_are_the_catalogs(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [text_entry("one")])
    providers = [ProviderConfig(id="acme", models=[ModelConfig(id="acme/large-1")])]
    async with serve_scenario(root, providers=providers) as server:
        client = _client(server.url)
        await client.chat.completions.create(model="deepseek-chat", messages=[])
        assert [m.id for m in (await client.models.list()).data] == ["acme/large-1"]
        with pytest.raises(openai.NotFoundError) as missing:
            await client.models.retrieve("deepseek-chat")
        await client.close()
    assert missing.value.code == "MODEL_NOT_FOUND"


async def _tool_results(url: str) -> list[dict[str, Any]]:
    """The tool results the recording sent back before call 1 (what a faithful agent sends)."""
    async with httpx.AsyncClient(base_url=url) as http:
        context = (await http.get("/replay/v1/context/0/1")).json()["context"]
    return [{"type": "function_call_output", "call_id": item["toolCallId"], "output": item["text"]}
            for item in context if item["role"] == "tool"]


def _plain(dumped: dict[str, Any]) -> dict[str, Any]:
    """A response as the SDK dumps it, without what its stream helper adds (parsed arguments)."""
    output = [{k: v for k, v in item.items() if k != "parsed_arguments"}
              for item in dumped["output"]]
    return {**dumped, "output": output}


@needs_corpus
@pytest.mark.parametrize("streamed", [True, False])
async def test_previous_response_id_is_accepted_and_served_responses_can_be_fetched(
        streamed: bool) -> None:
    assert CORPUS is not None
    async with serve_scenario(CORPUS / "scenarios" / TOOL_LOOP) as server:
        client = _client(server.url, "/runs/t1/sessions/agent")
        if streamed:
            async with client.responses.stream(model="gpt-replay", input="go") as stream:
                first = await stream.get_final_response()
        else:
            first = await client.responses.create(model="gpt-replay", input="go")
        assert [i.type for i in first.output] == ["function_call", "function_call"]
        results = await _tool_results(server.url)
        assert [r["call_id"] for r in results] == [i.call_id for i in first.output]
        # The next turn sends only the tool results and points at the previous response.
        second = await client.responses.create(model="gpt-replay", previous_response_id=first.id,
                                               input=results)  # type: ignore[arg-type]
        assert second.previous_response_id == first.id and second.output_text == "DONE"
        assert server.engine.consumed_problems("t1") == []
        journal = server.engine.journal("t1")
        assert [r.call_index for r in journal] == [0, 1]  # positional
        assert journal[1].divergence is None  # the tool results are the recorded ones
        for response in (first, second):
            fetched = await client.responses.retrieve(response.id)
            assert fetched.model_dump() == _plain(response.model_dump())
        bare = _client(server.url, "/runs/t1")  # the same run, without the session prefix
        assert (await bare.responses.retrieve(first.id)).id == first.id
        elsewhere = _client(server.url)  # run default served nothing
        with pytest.raises(openai.NotFoundError) as missing:
            await elsewhere.responses.retrieve(first.id)
        assert missing.value.code == "RESPONSE_NOT_FOUND"
        assert missing.value.response.headers["x-should-retry"] == "false"
        async with httpx.AsyncClient(base_url=server.url) as http:
            await http.post("/runs/t1/replay/v1/reset")
        with pytest.raises(openai.NotFoundError):
            await bare.responses.retrieve(first.id)  # a reset run forgets what it served
        for api in (client, bare, elsewhere):
            await api.close()


async def test_a_run_keeps_its_newest_responses_up_to_the_journal_limit(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [text_entry(f"answer {n}") for n in range(3)])
    engine = ReplayEngine(load_scenario(root).scripts, journal_limit=2)
    async with ReplayServer(engine) as server:
        client = _client(server.url)
        made = [await client.responses.create(model="m", input="go") for _ in range(3)]
        with pytest.raises(openai.NotFoundError):
            await client.responses.retrieve(made[0].id)
        for response in made[1:]:
            assert (await client.responses.retrieve(response.id)).output_text == response.output_text
        await client.close()


async def test_a_response_in_flight_is_fetched_as_it_stands(tmp_path: Path) -> None:
    root = write_scenario(tmp_path / "s", [text_entry("half and the rest", parts=2)])
    engine = ReplayEngine(load_scenario(root).scripts)
    engine.set_mode("chunk")
    async with ReplayServer(engine) as server:
        client = _client(server.url)
        async with client.responses.stream(model="m", input="go") as stream:
            created = None
            async for event in stream:
                if event.type == "response.created":
                    created = event.response
                    engine.step(None)  # let the block open
                if event.type == "response.output_item.added":
                    assert created is not None
                    now = await client.responses.retrieve(created.id)
                    assert (now.status, now.output) == ("in_progress", [])
                    engine.set_mode("run")
                    engine.step(None, how="continue")
            final = await stream.get_final_response()
        fetched = await client.responses.retrieve(final.id)
        assert fetched.status == "completed" and fetched.output_text == "half and the rest"
        await client.close()
