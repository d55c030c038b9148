"""What each conformance call must look like once a real client library has assembled it.

``expected_calls`` reads a scenario's recorded calls; each client test turns what its
library assembled into the same ``Assembled`` shape and compares call by call.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from replay_engine import ChunksEntry, HangEntry, ThrowEntry, load_scenario
from replay_engine.wire.dialect import failure_of, is_error_finish
from replay_engine.wire.openai_chat import finish_reason, status_for_code, usage_to_wire
from tests.conftest import SAMPLES, conformance_dir
from tests.wire.wire_helpers import recorded_content

CORPUS = conformance_dir()
PREFIX = "examples__acp-agent__tests__snapshots__"

CHUNK_SCENARIOS = {
    "text-turn": "reasoning, then text",
    "parallel-tool-calls": "two tool calls in one answer, then text",
    "cancel-tool-calls": "two tool calls whose every delta repeats id and name",
    "packed-chunks": "packed chunk rows: reasoning, a tool call, then text",
    "max-tokens-continue": "a max-tokens finish, then text",
    "empty-response-retry": "an error finish (EMPTY_RESPONSE), then text",
}
"""Conformance scenarios (name after ``PREFIX``) whose every call is a chunks entry. An error
finish ends its call like a throw after its prefix on the chat route (docs/format.md#wire-openai-chat):
clients raise."""

needs_corpus = pytest.mark.skipif(CORPUS is None, reason="conformance corpus absent")


def scenario_dir(name: str) -> Path:
    """A conformance scenario by its short name, or a bundled sample by its directory name."""
    if (SAMPLES / name).is_dir():
        return SAMPLES / name
    assert CORPUS is not None
    return CORPUS / "scenarios" / (PREFIX + name)


@dataclass
class Assembled:
    """One call as a client library hands it to the agent."""

    text: str = ""
    reasoning: str | None = None
    """None where the library does not expose reasoning."""
    tools: list[dict[str, Any]] = field(default_factory=list)
    """``{"id", "name", "arguments"}`` with the arguments parsed from JSON."""
    finish: str | None = None
    usage: dict[str, int] | None = None
    """``prompt_tokens``, ``completion_tokens``, ``total_tokens``."""
    error: tuple[int | None, str | None] | None = None
    """HTTP status (None mid-stream) and error code, for a failed call."""

    def without_reasoning(self) -> Assembled:
        """The same call for a library that does not expose reasoning."""
        return Assembled(self.text, None, self.tools, self.finish, self.usage, self.error)

    def answered_whole(self) -> Assembled:
        """The same call answered ``stream: false``: a failure after a prefix (a throw's, an
        error finish's) is the HTTP error of its code there."""
        if self.error is None or self.error[0] is not None or self.error[1] is None:
            return self
        return Assembled(error=(status_for_code(self.error[1]), self.error[1]))


def failed(exc: Exception) -> Assembled:
    """A call a client library raised on: the HTTP status (None mid-stream) and the code."""
    status = getattr(exc, "status_code", None)
    code = getattr(exc, "code", None)
    return Assembled(error=(status, code if isinstance(code, str) else None))


def tool(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    """A tool call with its arguments parsed (JSON-equal, whatever the spacing).

    Arguments cut off by a max-tokens finish are no JSON: they stay the exact string.
    """
    parsed = arguments
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except json.JSONDecodeError:
            parsed = arguments
    return {"id": call_id, "name": name, "arguments": parsed}


def base_usage(wire: dict[str, Any] | None) -> dict[str, int] | None:
    """The three counters every client exposes, from an OpenAI usage object."""
    if wire is None:
        return None
    return {k: int(wire[k]) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}


def expected_calls(name: str) -> list[Assembled]:
    """Every call of the scenario's first script, as a client must assemble it."""
    script = load_scenario(scenario_dir(name)).scripts[0]
    out: list[Assembled] = []
    for item in script.entries:
        entry = item.entry
        if isinstance(entry, ChunksEntry):
            content = recorded_content(entry.chunks)
            if is_error_finish(content["finish"]):
                out.append(Assembled(error=(None, failure_of(content["finish"])[1])))
                continue
            usage = content["usage"]
            out.append(Assembled(
                text=content["text"], reasoning=content["reasoning"],
                tools=[tool(t["id"], t["name"], t["arguments"]) for t in content["tools"]],
                finish=finish_reason(content["finish"]),
                usage=base_usage(usage_to_wire(usage)) if usage is not None else None))
        elif isinstance(entry, ThrowEntry):
            status = None if entry.chunks else status_for_code(entry.code)
            out.append(Assembled(error=(status, entry.code)))
        else:
            assert isinstance(entry, HangEntry)
            out.append(Assembled(error=(None, "ABORTED")))
    return out


def accumulate(chunks: list[dict[str, Any]]) -> Assembled:
    """Raw chat-completion chunks folded as stream accumulators do: every string concatenated.

    An id or name sent on more than one delta of a tool call arrives doubled, as it
    does in the SDK helpers, LangChain and llama-index.
    """
    got = Assembled(reasoning="")
    tools: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        if chunk.get("usage"):
            got.usage = base_usage(chunk["usage"])
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            got.text += delta.get("content") or ""
            got.reasoning = (got.reasoning or "") + (delta.get("reasoning_content") or "")
            for call in delta.get("tool_calls") or []:
                slot = tools.setdefault(call["index"], {"id": "", "name": "", "arguments": ""})
                function = call.get("function") or {}
                slot["id"] += call.get("id") or ""
                slot["name"] += function.get("name") or ""
                slot["arguments"] += function.get("arguments") or ""
            if choice.get("finish_reason"):
                got.finish = choice["finish_reason"]
    got.tools = [tool(t["id"], t["name"], t["arguments"]) for _, t in sorted(tools.items())]
    return got


NODE_DIR = Path(__file__).parent / "node"


NODE_GENAI_DIR = Path(__file__).parent / "node_genai"
"""The pinned @google/genai (its own lockfile, so the openai-node tests install nothing more)."""


@functools.cache
def _npm_ci(directory: Path, package: str) -> str | None:
    """Install the pinned ``package`` from the lockfile in ``directory``; the problem, or None
    once installed."""
    npm = shutil.which("npm")
    if npm is None:
        return f"{package} is not installed and npm is absent: run `npm ci` in {directory}"
    done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=directory,
                          capture_output=True, text=True, timeout=100, check=False)
    if done.returncode != 0 or not (directory / "node_modules" / package).is_dir():
        return f"`npm ci` in {directory} failed: {done.stderr.strip()[-500:]}"
    return None


def node_or_skip(directory: Path = NODE_DIR, package: str = "openai") -> str:
    """The ``node`` binary with the pinned ``package`` installed in ``directory``; skip (fail in
    CI) when absent.

    The package is installed from the lockfile (``npm ci``) on first use when npm is there, so
    ``python3 -m pytest`` alone runs these tests on a fresh checkout.
    """
    node = shutil.which("node")
    problem = None
    if node is None:
        problem = "node is not installed"
    elif not (directory / "node_modules" / package).is_dir():
        problem = _npm_ci(directory, package)
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{problem} (CI must run the node compatibility tests)")
        pytest.skip(problem)
    assert node is not None
    return node
