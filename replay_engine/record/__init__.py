"""Record a live agent run into a scenario this project replays (``dsh-replay record``,
docs/format.md#recording).

The recorder is a loopback proxy for the model routes: each call goes on to the upstream with
the client's own headers (its API key is never written anywhere), the answer streams back
byte for byte as it arrives, and each live session's calls land in its own log of the
scenario directory, appended and flushed per call.

For programs and test plugins, :func:`record_scenario` runs one recording inside the current
event loop::

    async with record_scenario("scenarios/foo", "https://api.deepseek.com") as rec:
        client = openai.AsyncOpenAI(base_url=rec.base_url, api_key=key)
        ...                        # drive the agent; rec.reports lists each recorded call
    # on exit the logs are finished; rec.problems says why the scenario would not load, if so

``record_scenario(directory, upstream, *, host="127.0.0.1", port=0, pack=False, force=False,
log_format="v1", listener=None, on_failure=None, scrub=None)``: ``pack`` writes runs of deltas
as packed rows; ``log_format="v4"`` writes ``session[.N].v4.jsonl`` logs (docs/format.md#generations
settlements);
``force`` records into a directory that already holds a scenario, keeping its files as
``.bak.N`` (else InputError ``SCENARIO_EXISTS``); a directory another recorder is writing is
refused (``RECORDING_LOCKED``, naming its pid); ``listener`` is called with a
:class:`CallReport` per recorded call. A write that fails (disk full, permissions) stops the
recording: the logs keep every whole call, ``on_failure`` is called with the typed error
(``RECORD_WRITE``), later calls are answered 503, and leaving the block raises it. ``scrub`` (a
:class:`Scrubber`, see ``record/scrub.py``) applies the user's hooks and text rules to what is
written. The yielded :class:`Recording` has ``url`` (the origin), ``base_url`` (``url +
"/v1"``, what an OpenAI SDK takes), ``directory``, ``reports``, ``problems`` and ``failure``.

Dialects plug in through :class:`~replay_engine.record.dialect.RecordDialect` (the seam; one
sibling module per dialect, as in ``replay_engine/wire``, listed by ``dialects``); built in
are the OpenAI / DeepSeek chat-completions wire (``openai_chat``), Anthropic Messages
(``anthropic``, ``/v1/messages``; an Anthropic SDK takes ``url`` as its base URL), OpenAI
Responses (``responses``, ``/v1/responses``) and the Gemini API (``gemini``,
``/v1beta/models/{model}:generateContent`` and ``:streamGenerateContent``; a google-genai
client takes ``url`` as its base URL).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import SCENARIO_EXISTS, ReplayError
from .calls import CallReport, FailureListener, Listener
from .dialect import RecordDialect
from .dialects import DIALECTS
from .forward import NETWORK
from .openai_chat import OPENAI_CHAT
from .proxy import RecordProxy, check_upstream
from .scrub import Scrubber, load_scrub_file
from .writer import DEFAULT_FORMAT, ScenarioRecorder

__all__ = [
    "DIALECTS",
    "NETWORK",
    "OPENAI_CHAT",
    "SCENARIO_EXISTS",
    "CallReport",
    "FailureListener",
    "Listener",
    "RecordDialect",
    "RecordProxy",
    "Recording",
    "ScenarioRecorder",
    "Scrubber",
    "check_upstream",
    "load_scrub_file",
    "record_scenario",
]


@dataclass(frozen=True, slots=True)
class Recording:
    """A running recording: where clients connect, and what was recorded so far."""

    url: str
    """The recorder's origin, e.g. ``http://127.0.0.1:8765``."""
    recorder: ScenarioRecorder
    port: int
    """The port the recorder listens on (the one bound when 0 was asked for)."""

    @property
    def base_url(self) -> str:
        """The base URL an OpenAI-compatible SDK takes (``url + "/v1"``)."""
        return self.url + "/v1"

    @property
    def directory(self) -> Path:
        """The scenario directory being written."""
        return self.recorder.directory

    @property
    def reports(self) -> list[CallReport]:
        """Every call written so far: per session in request order (a call that ended early
        is written once the calls started before it are)."""
        return self.recorder.reports

    @property
    def problems(self) -> list[str]:
        """Why the scenario will not load as recorded (a child's failed call), if so."""
        return self.recorder.problems

    @property
    def failure(self) -> ReplayError | None:
        """Why the recording stopped on its own (a write that failed), if it did."""
        return self.recorder.failure


@contextlib.asynccontextmanager
async def record_scenario(directory: str | Path, upstream: str, *, host: str = "127.0.0.1",
                          port: int = 0, pack: bool = False, force: bool = False,
                          log_format: str = DEFAULT_FORMAT, listener: Listener | None = None,
                          on_failure: FailureListener | None = None,
                          scrub: Scrubber | None = None) -> AsyncIterator[Recording]:
    """Record into ``directory`` from ``upstream`` while the block runs; finishes the logs on
    exit (a call still streaming then is not recorded) and raises the recording's failure,
    if it had one."""
    check_upstream(upstream)  # before the directory is touched
    # the directories recording creates, removed again when it cannot start
    created = [p for p in (Path(directory), *Path(directory).parents) if not p.exists()]
    recorder = ScenarioRecorder(directory, pack=pack, force=force, log_format=log_format)
    if listener is not None:
        recorder.listeners.append(listener)
    if on_failure is not None:
        recorder.failure_listeners.append(on_failure)
    if scrub is not None:
        recorder.scrub = scrub
    proxy = RecordProxy(recorder, upstream, host=host, port=port)
    try:
        url = await proxy.start()
    except BaseException:
        recorder.close()
        await proxy.client.aclose()
        for made in created:  # nothing was recorded: leave no empty directory behind
            with contextlib.suppress(OSError):
                made.rmdir()
        raise
    try:
        yield Recording(url, recorder, proxy.port)
    except BaseException:
        await proxy.stop()
        raise
    await proxy.stop()
    if recorder.failure is not None:
        raise recorder.failure
