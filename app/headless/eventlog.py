"""How engine events read in the event log (one line each; chunk events are only counted)."""

from __future__ import annotations

from rich.text import Text

from replay_engine import events as ev

from .header import pace_label
from .scriptinfo import RULE_WORDS


def _who(session: str | None) -> str:
    return session if session is not None else "(anonymous)"


def format_event(event: ev.EngineEvent, names: list[str]) -> Text | None:
    """The log line of an event, or None for events the log does not show."""
    def script(i: int) -> str:
        return f"[{i}] {names[i] if i < len(names) else '?'}"

    if isinstance(event, ev.SessionBound):
        return Text(f"bound {_who(event.session)} → script {script(event.script_index)}, "
                    f"by {event.rule} ({RULE_WORDS.get(event.rule, event.rule)})", style="cyan")
    if isinstance(event, ev.CallStarted):
        retry = " — SDK retry" if event.retry else ""
        wire = f", {event.dialect}" if event.dialect else ""
        return Text(f"{_who(event.session)} call #{event.call_index} started ({event.kind}{wire})"
                    f"{retry}",
                    style="yellow" if event.retry else "")
    if isinstance(event, ev.CallPaused):
        return Text(f"{_who(event.session)} call #{event.call_index} paused before chunk "
                    f"{event.chunk_index}", style="yellow")
    if isinstance(event, ev.CallResumed):
        return None
    if isinstance(event, ev.HangWaiting):
        ready = f", readyFile {event.ready_file}" if event.ready_file else ""
        return Text(f"{_who(event.session)} call #{event.call_index} HANGING until cancelled{ready}",
                    style="bold red")
    if isinstance(event, ev.CallFinished):
        return Text(f"{_who(event.session)} call #{event.call_index} finished ({event.chunks} "
                    "chunk(s) served)", style="green")
    if isinstance(event, ev.CallFailed):
        return Text(f"{_who(event.session)} call #{event.call_index} failed {event.code}: "
                    f"{event.message}", style="red")
    if isinstance(event, ev.CallCancelled):
        return Text(f"{_who(event.session)} call #{event.call_index} cancelled (ABORTED)",
                    style="magenta")
    if isinstance(event, ev.BindingFailed):
        retry = " — SDK retry" if event.retry else ""
        return Text(f"binding failed {event.code}: {event.message}{retry}", style="bold red")
    if isinstance(event, ev.RunReset):
        return Text(f"run {event.run} reset: bindings and cursors forgotten", style="bold")
    if isinstance(event, ev.RunForgotten) and event.evicted:
        return Text(f"run {event.run} evicted: the least recently used finished run past the "
                    "run limit", style="dim")
    if isinstance(event, ev.RunForgotten):
        return Text(f"run {event.run} deleted: bindings, cursors and journal dropped", style="bold")
    if isinstance(event, ev.JournalTrimmed):
        return Text(f"run {event.run}: journal full ({event.limit} calls); the oldest calls are "
                    "dropped from now on", style="yellow")
    if isinstance(event, ev.SettingsChanged):
        s = event.settings
        return Text(f"settings: mode {s.get('mode')}, pace {pace_label(event.pace)}, "
                    f"{len(s.get('breakpoints', []))} breakpoint(s)", style="dim")
    return None
