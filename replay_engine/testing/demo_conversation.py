"""The demo agent's fixed conversation: a short chat (two user turns on one session) streamed
through the demo agent's client of one dialect, for a server that holds no recording yet, such as the
recording proxy of ``dsh-replay-tui --record``.

The replay driver (``demo_agent``) plays the calls a replay server lists; a recorder lists none,
so this one says fixed things and keeps what the upstream answers in its history.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from .demo_agent import CallOutcome, DemoResult
from .demo_wires import DemoClients, check_dialect, describe, server_root, unreachable

TURNS = (
    "Hello! In one sentence, what can you help me with?",
    "Thanks. Now say goodbye in exactly three words.",
)
"""What the demo says, one user message per model call."""

KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "responses": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
}
"""Where each dialect's SDK finds its key; the recorder forwards it upstream (and never
writes it)."""

SESSION = "demo-conversation"


def api_key_of(dialect: str) -> tuple[str, str | None]:
    """The API key for ``dialect`` from the environment and the variable it came from (``replay``
    and None when none is set: a replay server upstream needs no key)."""
    for name in KEY_VARIABLES[dialect]:
        value = os.environ.get(name)
        if value:
            return value, name
    return "replay", None


async def run_demo_conversation(base_url: str, *, dialect: str = "openai",
                                out: Callable[[str], None] | None = None,
                                turns: Sequence[str] = TURNS, session: str = SESSION,
                                api_key: str | None = None) -> DemoResult:
    """Say ``turns`` to the server at ``base_url`` one call each, streaming every answer and
    keeping it in the history; stops at the first call that fails.

    The key is ``api_key``, else the dialect's variable (``OPENAI_API_KEY``, ...), else a dummy.
    Raises ServerUnreachableError when the server cannot be reached, ConfigError for an unknown
    dialect. ``consumed`` in the result means every turn was answered.
    """
    check_dialect(dialect)
    say = out if out is not None else print
    root = server_root(base_url)
    if api_key is None:
        api_key, variable = api_key_of(dialect)
        say(f"the key comes from ${variable}" if variable else
            f"no {' or '.join('$' + v for v in KEY_VARIABLES[dialect])} set: a real upstream "
            "may refuse the calls (401)")
    wire = DemoClients(root, root, dialect, api_key=api_key, what="the server")
    result = DemoResult()
    try:
        async with httpx.AsyncClient(timeout=30.0) as http:
            try:
                catalog = await http.get(f"{root}/v1/models",
                                         headers={"authorization": f"Bearer {api_key}"})
            except httpx.TransportError as exc:
                raise unreachable(root, exc, "the server") from None
            if catalog.status_code == 200:
                try:
                    wire.pick_model(catalog.json())
                except ValueError:
                    pass  # not a catalog: keep the default model name
        messages: list[dict[str, Any]] = []
        for index, text in enumerate(turns):
            messages.append({"role": "user", "content": text})
            got = await wire.stream(session, messages)
            ok = got.error_code is None
            outcome = CallOutcome(session, 0, index, "chunks", ok, describe(got), got.error_code)
            result.calls.append(outcome)
            say(outcome.line())
            if not ok:
                result.failures.append(outcome.line())
                break
            wire.extend(messages, got)
    finally:
        await wire.close()
    result.consumed = not result.failures
    say(f"conversation done: {len(result.calls)} call(s) answered" if result.consumed else
        "conversation stopped: " + result.failures[0])
    return result
