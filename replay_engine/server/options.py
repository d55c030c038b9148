"""The options of everything that serves a scenario: ``dsh-replay serve``, ``dsh-replay-tui``,
``serve_scenario`` and the pytest plugin (``dsh-replay record`` takes the listening flags and
``--url-file``).

One home for the option set (``ServeOptions``), the flags that fill it (types, defaults and
help), how they resolve (the config file's ``paceMs`` under ``--pace-ms``, a recorded pace),
the flags that ask a debugger process for it again (``serve_flags``), and the engine it
configures (``ServeOptions.new_engine``); ``ReplayServer.serving`` builds the server from the
same set. The listening flags, the off-loopback warning and the cannot-listen error (exit 4
in every front end) are in ``server/listen.py``.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engine import BindMode, Pace, ReplayEngine
from ..engine.state import DEFAULT_JOURNAL_LIMIT
from ..errors import ConfigError
from ..files import output_file_problem
from ..models import ProviderConfig, SessionScript
from ..scenario.config import load_serve_config
from ..wire.dialect import CHAT_ERROR_FINISHES, RESPONSES_REASONING, WireOptions
from .listen import DEFAULT_HOST, DEFAULT_PORT, add_listen_arguments

if TYPE_CHECKING:
    from collections.abc import Sequence


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """The serve option set every front end shares: what the serving flags ask for, resolved
    and checked (``serve_scenario`` and the pytest plugin build one directly)."""

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
    """Where a front end writes its base URL once it listens (``serve``, the debugger)."""
    journal_limit: int = DEFAULT_JOURNAL_LIMIT
    """Calls each run's journal keeps (``--journal-limit``)."""
    sdk_retries: bool = False
    """Leave ``x-should-retry: false`` off error answers, so client SDKs may retry them."""
    strict: bool = False
    """A call whose request left the recording fails the verdict (``--strict``)."""
    bind: BindMode = "content"
    """How new sessions claim scripts (``--bind``)."""
    wire: WireOptions = field(default_factory=WireOptions)
    """How the dialects put what a provider's wires say two ways (``--chat-error-finish``,
    ``--responses-reasoning``)."""

    def new_engine(self, scripts: Sequence[SessionScript] = (), *,
                   ready_dir: Path | None = None) -> ReplayEngine:
        """The engine these options ask for: pace, ready dir (``ready_dir`` stands in when no
        ``--ready-dir`` was given), journal limit, strict verdicts and binding rule."""
        return ReplayEngine(scripts, self.pace.ms, pace=self.pace,
                            ready_dir=self.ready_dir or ready_dir,
                            journal_limit=self.journal_limit, strict=self.strict, bind=self.bind)


def serve_fields(options: ServeOptions) -> dict[str, Any]:
    """The serve option set's fields by name, to build an option set that extends it (the
    debugger's ``AppOptions``) without naming each one again."""
    return {f.name: getattr(options, f.name) for f in dataclasses.fields(ServeOptions)}


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
    parser.add_argument("--ready-dir", type=_ready_dir, default=None, metavar="DIR",
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
                        "else first-call order) or order (first-call order alone, as docs/format.md#binding)")
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
    parser.add_argument("--url-file", type=_url_file, default=None, metavar="FILE",
                        help="write the base URL to FILE (atomically) once serving")


def _ready_dir(text: str) -> Path:
    """``--ready-dir``: a directory, or a path where one can be made (it is created when
    missing); a file there is a usage error at start, not a READY_FILE at the first hang."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(
            f"{text}: not a directory; give the directory hang readyFiles are made in (it is "
            "created when missing)")
    return path


def _url_file(text: str) -> Path:
    """``--url-file``: a file path in an existing directory, checked before listening."""
    path = Path(text)
    problem = output_file_problem(path, "url.txt")
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return path


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


def serve_flags(options: ServeOptions) -> list[str]:
    """The flags that make another front end (a debugger process) serve with ``options``:
    every option that differs from its default, as ``add_serve_arguments`` parses it back.

    The provider catalog comes from a ``--config`` file, so a ``providers`` list cannot be
    passed on (``ValueError``)."""
    default = ServeOptions()
    flags: list[str] = []
    if options.host != default.host:
        flags += ["--host", options.host]
    if options.port != default.port:
        flags += ["--port", str(options.port)]
    for name in options.allow_hosts:
        flags += ["--allow-host", name]
    if options.pace.mode == "recorded":
        flags += ["--pace", f"recorded:{options.pace.speed!r}"]
    if options.pace.ms:
        flags += ["--pace-ms", str(options.pace.ms)]
    if options.providers is not None:
        raise ValueError("a provider catalog goes to another front end as a --config file")
    for flag, path in (("--ready-dir", options.ready_dir), ("--url-file", options.url_file)):
        if path is not None:
            flags += [flag, str(path)]
    if options.journal_limit != default.journal_limit:
        flags += ["--journal-limit", str(options.journal_limit)]
    if options.strict:
        flags.append("--strict")
    if options.bind != default.bind:
        flags += ["--bind", options.bind]
    if options.wire.chat_error_finish != default.wire.chat_error_finish:
        flags += ["--chat-error-finish", options.wire.chat_error_finish]
    if options.wire.responses_reasoning != default.wire.responses_reasoning:
        flags += ["--responses-reasoning", options.wire.responses_reasoning]
    if options.sdk_retries:
        flags.append("--sdk-retries")
    return flags


def whole_number(text: str, minimum: int, below: str, unit: str = "") -> int:
    """A flag's whole number of at least ``minimum``, else a usage error (``below`` says why a
    smaller one cannot be used; ``unit`` names what it counts)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number{unit}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"{value}: {below}")
    return value


def _journal_limit(text: str) -> int:
    return whole_number(text, 1, "keep at least 1 call per run")
