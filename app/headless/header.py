"""What the header says, in the order that matters: state flags first (PAUSED, HANGING, diverged
at #N, the verdict), then run, pace, URL and path; in record mode, RECORDING and the calls
recorded per session. Lines are lists of segments; ``fit`` cuts the least important ones first,
so nothing that matters falls off at 80 columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.text import Text

from replay_engine import VERDICT_WAITING, Pace, RunState

GAP = "  "
MIN_PATH = 12
"""A path is never cut below this many cells (``…`` and the tail of the directory name)."""
PATH_ROOM = 24
"""Cells the path keeps before the segments ahead of it are cut or dropped to make room."""
MIN_KEPT = 16
"""A segment before the path that would keep this many cells is cut at its end, not dropped."""


def pace_label(pace: Pace) -> str:
    """The pace in words: no delay, a fixed delay per chunk, or the recorded gaps at a speed."""
    if pace.mode == "recorded":
        fallback = f", {pace.ms}ms where none recorded" if pace.ms else ""
        return f"recorded gaps x{pace.speed:g}{fallback}"
    return f"{pace.ms}ms per chunk" if pace.ms else "no delay"


@dataclass(frozen=True, slots=True)
class Line:
    """One header line: segments most important first; ``path`` is the index of the segment
    cut from its start (a file path) before whole segments are dropped, if any."""

    segments: tuple[Text, ...]
    path: int | None = None
    flexible: int | None = None
    """The index of a segment ahead of the path that may lose its end (a long note) to make
    room for the path; every other segment is kept whole or dropped."""
    path_room: int = 0
    """Cells the path keeps before segments ahead of it give way (MIN_PATH when 0)."""


@dataclass(frozen=True, slots=True)
class ReplayFacts:
    """What the replay header shows (nothing here reads a clock, so snapshots are stable)."""

    scenario: str
    url: str
    state: RunState
    breakpoints: int = 0
    paused: int = 0
    untimed: Sequence[str] = ()
    """Logs without recorded chunk times (recorded pace has no gaps to replay there)."""
    loaded: bool = True
    """False while no scenario ever loaded (nothing is served)."""
    serving: bool = True
    """False when the server could not listen (no agent can reach it: nothing to wait for)."""
    flight: str = ""
    """What is in flight, cut or refused (``consumed ✓`` shows only when it is empty)."""
    runs: Sequence[str] = ()
    strict: bool = False


@dataclass(frozen=True, slots=True)
class RecordFacts:
    """What the record-mode header shows."""

    upstream: str
    url: str
    scenario: str
    calls: Sequence[tuple[str, int]] = ()
    """(session, calls recorded) in the order sessions first called."""
    title: str | None = None
    """The first segment (None: ``● RECORDING → upstream``; going live says so)."""
    stop: str = "s: stop and replay"
    """The key that ends it."""


def replay_lines(f: ReplayFacts) -> tuple[Line, Line]:
    """The replay header: the state line, then where (run, pace, URL, path)."""
    state = f.state
    flags: list[Text] = []
    if f.paused:
        flags.append(Text(f"PAUSED {f.paused}", style="bold black on yellow"))
    hanging = sum(1 for b in state.bindings if b.status == "hanging")
    if hanging:
        flags.append(Text(f"HANGING {hanging}", style="bold white on red"))
    if state.first_divergence is not None:
        script, call = state.first_divergence
        of = "" if script == 0 else f" of script {script}"
        flags.append(Text(f"diverged at #{call}{of}", style="bold red"))
    if not f.loaded:
        flags.append(Text("nothing loaded", style="bold red"))
    elif not f.serving:
        flags.append(Text("not serving", style="bold red"))
    elif not state.bindings and not state.refused and not f.flight and not state.consumed:
        flags.append(Text(VERDICT_WAITING))
    elif state.consumed and not f.flight:
        flags.append(Text("consumed ✓", style="bold green"))
    elif state.consumed:
        flags.append(Text(f"consumed, but {f.flight}", style="bold yellow"))
    else:
        flags.append(Text("not consumed" + (f" ({f.flight})" if f.flight else ""), style="yellow"))
    flags.append(Text(f"bound {len(state.bindings)}/{state.scripts}"))
    flags.append(Text.assemble("mode ", (state.mode, "bold" if state.mode == "run" else "bold yellow")))
    if f.breakpoints:
        flags.append(Text(f"breakpoints {f.breakpoints}", style="red"))
    if f.strict:
        flags.append(Text("strict", style="bold"))
    where: list[Text] = [Text(f"run {state.run}")]
    if len(f.runs) > 1 and state.run in f.runs:
        where[0].append(f" ({f.runs.index(state.run) + 1} of {len(f.runs)} runs, r: next)",
                        style="bold")
    pace = Text(f"pace {pace_label(state.pace)}")
    if state.pace.mode == "recorded" and f.untimed:
        pace.append(f" — {', '.join(f.untimed)}: no recorded times, so no gaps", style="yellow")
    where += [pace, Text(f.url, style="underline"), Text(f.scenario, style="bold cyan")]
    return Line(tuple(flags)), Line(tuple(where), path=len(where) - 1, flexible=1,
                                      path_room=PATH_ROOM)


def record_lines(f: RecordFacts) -> tuple[Line, Line]:
    """The record-mode header: RECORDING → upstream and the calls per session, then where the
    agent points and where the recording goes."""
    total = sum(n for _, n in f.calls)
    first = [Text(f.title or f"● RECORDING → {f.upstream}", style="bold white on red"),
             Text(f"{total} call{'s' if total != 1 else ''} recorded", style="bold")]
    first += [Text(f"{_short(name, 20)} {n}") for name, n in f.calls]
    second = (Text.assemble("agent → ", (f"{f.url}/v1", "underline")),
              Text(f.stop, style="bold"), Text(f"into {f.scenario}", style="bold cyan"))
    return Line(tuple(first)), Line(second, path=2)


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def fit(line: Line, width: int) -> Text:
    """``line`` within ``width`` cells: whole segments go from the end, the cut marked with
    ``…``. A path (always the last segment) goes never: it loses its start, keeping at least
    its ``path_room`` while segments ahead of it can give way (the flexible one loses its end
    first), MIN_PATH while the first segment can."""
    segments = list(line.segments)
    total = _width(segments)
    if total <= width or width < 2:
        return _join(segments)
    if line.path is None:
        return _drop_from_end(segments, width)
    full = segments[line.path]
    want = min(line.path_room or MIN_PATH, full.cell_len)
    kept = list(range(line.path))
    dropped = False
    while True:
        rest = [segments[i] for i in kept] + ([Text("…")] if dropped else [])
        room = width - _width(rest) - len(GAP)
        if room >= want or len(kept) < 2:
            break
        last = kept[-1]
        if last == line.flexible and segments[last].cell_len - (want - room) >= MIN_KEPT:
            segments[last] = segments[last].copy()  # a long note loses its end only
            segments[last].truncate(segments[last].cell_len - (want - room), overflow="ellipsis")
            continue
        kept.pop()
        dropped = True
    head = [segments[i] for i in kept]
    if dropped and not head[-1].plain.endswith("…"):
        head.append(Text("…"))
    room = width - _width(head) - len(GAP)
    if room < min(MIN_PATH, full.cell_len):  # the first segment gives way last
        head = [segments[0].copy()]
        head[0].truncate(max(width - len(GAP) - MIN_PATH, 1), overflow="ellipsis")
        room = width - _width(head) - len(GAP)
    text = _join([*head, _cut_start(full, room, floor=2)])
    text.truncate(width, overflow="ellipsis")
    return text


def _cut_start(path: Text, keep: int, floor: int = MIN_PATH) -> Text:
    """``path`` in ``keep`` cells (never fewer than ``floor``), its start replaced by ``…``."""
    keep = max(keep, floor) - 1
    if keep >= path.cell_len - 1:
        return path
    return Text.assemble("…", path[path.cell_len - keep:])


def _drop_from_end(segments: list[Text], width: int) -> Text:
    while len(segments) > 1 and _width(segments) > width:
        segments.pop()
        if _width(segments) + len(GAP) + 1 <= width:
            return Text.assemble(_join(segments), GAP, "…")
    text = _join(segments)
    text.truncate(width, overflow="ellipsis")
    return text


def _width(segments: Iterable[Text]) -> int:
    parts = list(segments)
    return sum(s.cell_len for s in parts) + len(GAP) * max(len(parts) - 1, 0)


def _join(segments: Sequence[Text]) -> Text:
    return Text(GAP).join(segments)
