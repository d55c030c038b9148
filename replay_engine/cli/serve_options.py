"""The options of everything that serves a scenario: ``dsh-replay serve`` and ``dsh-replay-tui``
(and of ``dsh-replay record``, which takes their listening flags and ``--url-file``).

One home for the flags, their types, defaults and help, how they resolve (the config file's
``paceMs`` under ``--pace-ms``, a recorded pace) and what their errors exit with, so the two
front ends cannot drift apart. The listening flags, the off-loopback warning and the
cannot-listen error (exit 4 in every front end) are in ``server/listen.py``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from ..engine import Pace
from ..engine.claims import BindMode
from ..engine.state import DEFAULT_JOURNAL_LIMIT
from ..errors import ConfigError
from ..models import ProviderConfig
from ..scenario.config import load_serve_config
from ..server.listen import DEFAULT_HOST, DEFAULT_PORT, add_listen_arguments
from ..wire.dialect import CHAT_ERROR_FINISHES, RESPONSES_REASONING, WireOptions


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """What the serving flags ask for, resolved and checked."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    allow_hosts: tuple[str, ...] = ()
    """Host / Origin names answered besides loopback and the listening address."""
    pace: Pace = field(default_factory=Pace)
    providers: list[ProviderConfig] | None = None
    """The provider catalog of ``--config`` (None: any model id is answered)."""
    ready_dir: Path | None = None
    """Where relative hang ``readyFile`` paths resolve (None: the front end's default)."""
    url_file: Path | None = None
    journal_limit: int = DEFAULT_JOURNAL_LIMIT
    sdk_retries: bool = False
    strict: bool = False
    """A call whose request left the recording fails the verdict (``--strict``)."""
    bind: BindMode = "content"
    """How new sessions claim scripts (``--bind``)."""
    wire: WireOptions = field(default_factory=WireOptions)
    """How the dialects put what a provider's wires say two ways (``--chat-error-finish``,
    ``--responses-reasoning``)."""


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """Every flag of a front end that serves a scenario, with one type, default and help."""
    add_listen_arguments(parser)
    parser.add_argument("--pace-ms", type=int, default=None, metavar="N",
                        help="wait N ms before every chunk (default: the config's paceMs, else 0)")
    parser.add_argument("--pace", default=None, metavar="recorded[:SPEED]",
                        help="replay the recorded gaps between chunks, scaled by SPEED (each gap "
                        "capped at 5 s)")
    parser.add_argument("--config", type=Path, default=None, metavar="FILE",
                        help="TOML or JSON with the provider catalog (providers) and paceMs")
    parser.add_argument("--ready-dir", type=Path, default=None, metavar="DIR",
                        help="where relative readyFile paths of hang entries resolve (default: "
                        "a temporary directory of its own, removed at exit: serve names each "
                        "marker in its hang line, the debugger shows it in Live)")
    add_url_file_argument(parser)
    parser.add_argument("--journal-limit", type=_journal_limit, default=DEFAULT_JOURNAL_LIMIT,
                        metavar="N", help="calls each run's journal keeps; older ones are "
                        f"dropped (default {DEFAULT_JOURNAL_LIMIT})")
    parser.add_argument("--strict", action="store_true",
                        help="fail the verdict when a request leaves the recording (its new "
                        "messages or tool results differ from the recorded ones) or a retry takes "
                        "a recorded call the recording has no retry for (default: position only, "
                        "and the first divergence is reported)")
    parser.add_argument("--bind", choices=("content", "order"), default="content",
                        help="how a new session claims a script: content (default: the one its "
                        "parent announced, else the one whose first recorded request it matches, "
                        "else first-call order) or order (first-call order alone, as SPEC 5)")
    parser.add_argument("--chat-error-finish", choices=CHAT_ERROR_FINISHES, default="error",
                        help="how a recorded error finish ends a chat-completions call: error "
                        "(default: an error event after its prefix, no [DONE], as a throw; "
                        "stream: false an HTTP error) so OpenAI-style clients raise, or reason "
                        "(finish_reason = the code in lower case, for clients that read "
                        "DeepSeek's codes)")
    parser.add_argument("--responses-reasoning", choices=RESPONSES_REASONING, default="summary",
                        help="how reasoning goes out on the Responses route: summary (default: "
                        "summary_text parts and reasoning_summary events, as OpenAI's reasoning "
                        "models send it) or content (reasoning_text content, the open-weight "
                        "models' form)")
    parser.add_argument("--sdk-retries", action="store_true",
                        help="let client SDKs retry error answers as with a real provider (by "
                        "default errors carry x-should-retry: false, so a retry cannot consume "
                        "the next recorded call)")


def add_url_file_argument(parser: argparse.ArgumentParser) -> None:
    """``--url-file``: where a front end writes its base URL once it listens (``serve``, the
    debugger and ``record``)."""
    parser.add_argument("--url-file", type=Path, default=None, metavar="FILE",
                        help="write the base URL to FILE (atomically) once serving")


def serve_options(args: argparse.Namespace) -> ServeOptions:
    """The checked options of parsed serving flags.

    Raises ``argparse.ArgumentTypeError`` for a flag value that cannot be used (the front
    ends report it as a usage error, exit 2) and ``ConfigError`` for a ``--config`` file that
    does not load (exit 1, like a scenario that does not load)."""
    config = load_serve_config(args.config) if args.config is not None else None
    ms = args.pace_ms if args.pace_ms is not None else (config.paceMs if config else 0)
    if ms < 0:
        raise argparse.ArgumentTypeError(f"--pace-ms {ms}: must be a non-negative integer")
    try:
        pace = Pace.parse(args.pace, ms) if args.pace is not None else Pace("fixed", ms)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None
    return ServeOptions(
        host=args.host, port=args.port, allow_hosts=tuple(args.allow_host), pace=pace,
        providers=config.providers if config else None, ready_dir=args.ready_dir,
        url_file=args.url_file, journal_limit=args.journal_limit, sdk_retries=args.sdk_retries,
        strict=args.strict, bind=args.bind,
        wire=WireOptions(chat_error_finish=args.chat_error_finish,
                         responses_reasoning=args.responses_reasoning),
    )


def _journal_limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: keep at least 1 call per run")
    return value
