"""A small demo agent that drives every recorded call of a running replay server.

It reads ``GET /replay/v1/scripts`` and plays each session one after another
(primary first, since binding follows first-call order) through a client of one
dialect (the openai SDK's chat completions or Responses stream; the Anthropic Messages
or Gemini stream spoken with httpx, so no optional SDK is needed), so a newcomer can
watch cursors move without an agent of their own. Hang calls are cancelled through the control API once they
are in place; throw calls are expected to fail with their scripted code.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from ..errors import ABORTED, BINDING_CODES, ServerUnreachableError
from ..wire.dialect import failure_of
from .demo_gemini import GEMINI_FINISH
from .demo_result import Streamed
from .demo_wires import (
    DEMO_DIALECTS,
    DemoClients,
    check_dialect,
    describe,
    server_root,
    short,
    unreachable,
)

__all__ = ["DEMO_DIALECTS", "CallOutcome", "DemoResult", "run_demo_agent"]

HANG_TIMEOUT_S = 10.0
"""How long to wait for a hang call to be in place, and for its stream to end once cancelled."""

POLL_S = 0.02
"""Polling interval while waiting for a hang's readyFile or state (no event crosses HTTP)."""

FINISH_REASONS: dict[str, dict[str, str]] = {
    "openai": {"stop": "stop", "tool-calls": "tool_calls", "max-tokens": "length"},
    "anthropic": {"stop": "end_turn", "tool-calls": "tool_use", "max-tokens": "max_tokens"},
    "responses": {"stop": "completed", "tool-calls": "completed",
                  "max-tokens": "incomplete (max_output_tokens)"},
    "gemini": GEMINI_FINISH,
}
"""Per dialect, recorded finish kinds and what the SDK reports for them: ``finish_reason``,
``stop_reason``, the final response's status, or ``finishReason`` (docs/format.md#wire-openai-chat,
#wire-anthropic, #wire-responses, #wire-gemini)."""


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """What happened to one driven call."""

    session: str
    script_index: int
    call_index: int
    kind: str
    ok: bool
    outcome: str
    code: str | None = None
    """The error code the call ended with, if any."""
    call_key: str | None = None
    """The recorded turn/step of the call (None for a sidecar entry)."""

    def line(self) -> str:
        """The one-line report printed for this call, in the debugger's terms: ``#N`` is the
        call's index in its script, ``(turn/step)`` its recorded key."""
        mark = "ok  " if self.ok else "FAIL"
        key = f" ({self.call_key})" if self.call_key else ""
        return f"{mark} {self.session} call #{self.call_index}{key} {self.kind}: {self.outcome}"


@dataclass(slots=True)
class DemoResult:
    """Every call driven, the unexpected outcomes, and the assert-consumed verdict."""

    calls: list[CallOutcome] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    consumed: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every call behaved as scripted and the run is consumed."""
        return self.consumed and not self.failures


def _expected_text(chunks: list[dict[str, Any]]) -> str:
    """The text content a client assembles from a call's recorded chunks (docs/format.md#wire-openai-chat)."""
    parts: list[str] = []
    with_deltas: set[object] = set()
    for chunk in chunks:
        kind = chunk.get("type")
        if kind == "text-delta" and isinstance(chunk.get("text"), str):
            with_deltas.add(chunk.get("index"))
            parts.append(chunk["text"])
        elif kind == "block-end":
            block = chunk.get("block")
            if (isinstance(block, dict) and block.get("type") == "text"
                    and chunk.get("index") not in with_deltas and isinstance(block.get("text"), str)):
                parts.append(block["text"])
    return "".join(parts)


def _expected_finish(chunks: list[dict[str, Any]], dialect: str = "openai") -> str | None:
    """How a recorded call should end on ``dialect``'s wire, when it is known.

    An error finish ends the stream with an error on every dialect, written ``error CODE``
    (``--chat-error-finish reason`` sends the code as a lower-case ``finish_reason``).
    """
    for chunk in reversed(chunks):
        if chunk.get("type") == "finish":
            reason = chunk.get("reason")
            kind = reason.get("kind") if isinstance(reason, dict) else None
            if kind == "error" and isinstance(reason, dict):
                return f"error {failure_of(reason)[1]}"
            return FINISH_REASONS[dialect].get(str(kind))
    return None


class _Driver:
    """Drives the scripts of one server run; holds the clients and the result."""

    def __init__(self, base_url: str, *, delay_ms: int, ready_dir: str | None, run: str | None,
                 out: Callable[[str], None], hang_timeout: float = HANG_TIMEOUT_S,
                 dialect: str = "openai") -> None:
        check_dialect(dialect)
        self.dialect = dialect
        root = server_root(base_url)
        self.server = root
        self.prefix = f"{root}/runs/{run}" if run else root
        self.delay_s = max(delay_ms, 0) / 1000
        self.hang_timeout = hang_timeout
        self.ready_dir = Path(ready_dir) if ready_dir is not None else None
        """Where relative readyFiles are looked for; None: where the server's state says it
        made them (a `serve` without --ready-dir makes them in a directory of its own)."""
        self.out = out
        self.result = DemoResult()
        self.http = httpx.AsyncClient(timeout=30.0)
        self.wire = DemoClients(self.prefix, root, dialect)

    async def close(self) -> None:
        await self.wire.close()
        await self.http.aclose()

    async def _get(self, route: str) -> Any:
        url = f"{self.prefix}{route}"
        try:
            response = await self.http.get(url)
        except httpx.TransportError as exc:
            raise unreachable(self.server, exc) from None
        if response.status_code != 200:
            raise ServerUnreachableError(
                f"GET {url} answered HTTP {response.status_code}; is {self.server} a dsh-replay "
                "replay server? (A recorder serves no scripts to drive.) Pass the URL that "
                "`dsh-replay serve` or the debugger prints.")
        try:
            return response.json()
        except ValueError:
            raise ServerUnreachableError(
                f"GET {url} did not answer JSON; is {self.server} a dsh-replay server?") from None

    async def _post(self, route: str, body: dict[str, Any]) -> httpx.Response:
        try:
            return await self.http.post(f"{self.prefix}{route}", json=body)
        except httpx.TransportError as exc:
            raise unreachable(self.server, exc) from None

    async def run(self) -> DemoResult:
        document = await self._get("/replay/v1/scripts")
        scripts = document.get("scripts") if isinstance(document, dict) else document
        if not isinstance(scripts, list):
            raise ServerUnreachableError(
                f"{self.prefix}/replay/v1/scripts did not list scripts; "
                f"is {self.server} a dsh-replay server?")
        await self._pick_model()
        first = True
        for index, script in enumerate(scripts):
            entries = script.get("entries", []) if isinstance(script, dict) else []
            session = f"demo-{index}"
            recorded = script.get("recordedId", "") if isinstance(script, dict) else ""
            messages: list[dict[str, Any]] = []
            for call_index, entry in enumerate(entries):
                if not first and self.delay_s:
                    await asyncio.sleep(self.delay_s)
                first = False
                await self._answer(index, call_index, messages, recorded)
                outcome = await self._drive(session, index, call_index, entry, messages)
                self.result.calls.append(outcome)
                if not outcome.ok:
                    self.result.failures.append(outcome.line())
                self.out(outcome.line())
        response = await self._post("/replay/v1/assert-consumed", {})
        verdict = response.json() if response.headers.get("content-type", "").startswith(
            "application/json") else {}
        self.result.consumed = bool(verdict.get("ok")) and response.status_code == 200
        problems = verdict.get("problems")
        self.result.problems = [str(p) for p in problems] if isinstance(problems, list) else []
        if any(c.code in BINDING_CODES for c in self.result.calls):
            self.out("hint: a call could not bind; the run may have been played already. Reset it "
                     "(POST /replay/v1/reset, or the debugger's reset key) or pass --run NAME.")
        if self.result.consumed:
            failed = f", {len(self.result.failures)} unexpected" if self.result.failures else ""
            self.out(f"consumed: every recorded call was served "
                     f"({len(self.result.calls)} call(s) driven{failed})")
        else:
            self.out("NOT consumed: " + ("; ".join(self.result.problems)
                                         or f"HTTP {response.status_code}"))
        return self.result

    async def _pick_model(self) -> None:
        """Use the first model of the provider catalog when there is one."""
        try:
            self.wire.pick_model(await self._get("/v1/models"))
        except ServerUnreachableError:
            return

    async def _drive(self, session: str, script_index: int, call_index: int, entry: Any,
                     messages: list[dict[str, Any]]) -> CallOutcome:
        kind = str(entry.get("kind", "?")) if isinstance(entry, dict) else "?"
        key = entry.get("callKey") if isinstance(entry, dict) else None

        got = Streamed()

        def done(ok: bool, outcome: str) -> CallOutcome:
            return CallOutcome(session, script_index, call_index, kind, ok, outcome, got.error_code,
                               key if isinstance(key, str) else None)

        if kind == "hang":
            ok, outcome, got = await self._drive_hang(session, entry, list(messages))
            return done(ok, outcome)
        got = await self.wire.stream(session, list(messages))
        chunks = entry.get("chunks", []) if isinstance(entry, dict) else []
        finish = _expected_finish(chunks, self.dialect) if isinstance(chunks, list) else None
        if kind == "throw":
            code = str(entry.get("code"))
            if got.error_code == code:
                how = f"HTTP {got.status}" if got.status else f"after {got.events} SSE event(s)"
                return done(True, f"threw {code} as scripted ({how})")
            return done(False, f"expected the scripted error {code}, got {describe(got)}")
        if got.error_code is not None and finish == f"error {got.error_code}":
            return done(True, f"ended with the recorded error finish {got.error_code} "
                              f"after {got.events} SSE event(s)")
        if got.error_code is not None:
            return done(False, describe(got))
        problems: list[str] = []
        raw = str(entry)
        if "{{fromRequest:" not in raw:
            expected = _expected_text(chunks)
            if got.text != expected:
                problems.append(f"text {short(got.text)!r} differs from recorded {short(expected)!r}")
        if finish not in (None, got.finish, f"error {str(got.finish).upper()}"):
            problems.append(f"{FINISH_NAMES[self.dialect]} {got.finish} but recorded {finish}")
        self.wire.extend(messages, got)
        summary = describe(got, recorded=len(chunks) if isinstance(chunks, list) else None)
        if problems:
            return done(False, summary + "; " + "; ".join(problems))
        return done(True, summary)

    async def _drive_hang(self, session: str, entry: dict[str, Any],
                          messages: list[dict[str, Any]]) -> tuple[bool, str, Streamed]:
        ready = entry.get("readyFile")
        path: Path | None = None
        stale = False
        if isinstance(ready, str) and ready:
            if os.path.isabs(ready):
                path = Path(ready)
            elif self.ready_dir is not None:
                path = self.ready_dir / ready
            stale = path is not None and path.exists()  # from an earlier run: ask the state
        task = asyncio.create_task(self.wire.stream(session, messages))
        try:
            seen, where = await self._wait_hanging(session, task, None if stale else path)
            reported = path is None and isinstance(ready, str) and bool(ready)
            made = reported and where is not None and Path(where).is_file()  # before the cancel
            if task.done():
                got = task.result()
                return False, f"expected a hang, but the stream ended: {describe(got)}", got
            response = await self._post("/replay/v1/cancel", {"sessionId": session})
            if response.status_code != 200:
                return False, f"POST /replay/v1/cancel answered HTTP {response.status_code}", Streamed()
            got = await asyncio.wait_for(task, self.hang_timeout)
        finally:
            if not task.done():
                task.cancel()
        if got.error_code != ABORTED:
            return False, f"cancelled, but the stream ended with {describe(got)} instead of ABORTED", got
        if not seen:
            return False, (f"cancelled (ABORTED), but readyFile {path} never appeared"
                           + (f"; the server made it at {where}, pass --ready-dir" if where else "")), got
        if reported and not made:
            return False, (f"cancelled (ABORTED), but the readyFile {where or ready} the server "
                           "reported is not on this machine's disk; pass --ready-dir"), got
        if reported:
            return True, (f"hung (readyFile {where}), cancelled, ended ABORTED after "
                          f"{got.events} SSE event(s)"), got
        how = f"readyFile {ready}" if path is not None and not stale else "state hanging"
        return True, f"hung ({how}), cancelled, ended ABORTED after {got.events} SSE event(s)", got

    async def _wait_hanging(self, session: str, task: asyncio.Task[Streamed],
                            path: Path | None) -> tuple[bool, str | None]:
        """Wait until the hang is in place: its readyFile exists, or (without one) the state says so.

        Returns whether that was seen, and the readyFile the server reports.
        """
        deadline = time.monotonic() + self.hang_timeout
        where: str | None = None
        while time.monotonic() < deadline and not task.done():
            if path is not None:
                if path.exists():
                    return True, str(path)
            else:
                hanging, where = await self._state_hanging(session)
                if hanging:
                    return True, where
            await asyncio.sleep(POLL_S)
        if path is not None and not task.done():
            hanging, where = await self._state_hanging(session)
        return False, where

    async def _state_hanging(self, session: str) -> tuple[bool, str | None]:
        state = await self._get("/replay/v1/state")
        bindings = state.get("bindings", []) if isinstance(state, dict) else []
        for binding in bindings:
            if isinstance(binding, dict) and binding.get("sessionKey") == session:
                ready = binding.get("readyFile")
                return binding.get("status") == "hanging", ready if isinstance(ready, str) else None
        return False, None

    async def _answer(self, index: int, call_index: int, messages: list[dict[str, Any]],
                      recorded: str) -> None:
        """Add what the recording said before this call (its user messages and tool results,
        from the server), so the agent replays the recorded conversation; where the log holds
        none (a sidecar entry), a made-up turn."""
        found = await self._get(f"/replay/v1/context/{index}/{call_index}")
        items = found.get("context") if isinstance(found, dict) else None
        if isinstance(items, list):
            # the recorded context runs from the last answered call: a failed call's request
            # is sent again as it was, not twice
            while messages and messages[-1].get("role") != "assistant":
                messages.pop()
            for item in items:
                if not isinstance(item, dict):
                    continue
                if item.get("role") == "tool":
                    messages.append({"role": "tool", "tool_call_id": item.get("toolCallId") or "",
                                     "content": str(item.get("text", ""))})
                else:
                    messages.append({"role": "user", "content": str(item.get("text", ""))})
            return
        pending = messages[-1].get("tool_calls") if messages else None
        for call in pending or []:
            messages.append({"role": "tool", "tool_call_id": call["id"],
                             "content": f"(demo agent: result of {call['function']['name']})"})
        if not pending:
            messages.append({"role": "user", "content":
                             f"Demo session {index} (recorded as {recorded or 'no id'}): go on."})


FINISH_NAMES = {"openai": "finish_reason", "anthropic": "stop_reason", "responses": "status",
                "gemini": "finishReason"}
"""What each dialect calls the way a call ended."""



async def run_demo_agent(base_url: str, *, delay_ms: int = 0, ready_dir: str | None = None,
                         run: str | None = None, out: Callable[[str], None] | None = None,
                         hang_timeout: float = HANG_TIMEOUT_S,
                         dialect: str = "openai") -> DemoResult:
    """Drive every call of every script served at ``base_url``; report each call through ``out``.

    ``dialect`` (one of DEMO_DIALECTS) picks the wire and SDK; ``hang_timeout`` bounds the wait for a
    hang to be in place and for its cancelled stream to end. Raises ServerUnreachableError when
    the server cannot be reached, ConfigError for an unknown dialect.
    """
    driver = _Driver(base_url, delay_ms=delay_ms, ready_dir=ready_dir, run=run,
                     out=out if out is not None else print, hang_timeout=hang_timeout,
                     dialect=dialect)
    try:
        return await driver.run()
    finally:
        await driver.close()
