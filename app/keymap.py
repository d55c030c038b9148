"""Every key of the debugger in one declarative table: the bindings, the footer, the help screen,
the command palette and the key page of the docs (docs/keys.md) are all built from it, so they cannot drift.

Run ``python -m dsh_replay_tui.keymap docs/keys.md`` to rewrite that page's key map from the table.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from textual.binding import Binding

from replay_engine import atomic_write

from .headless.moments import (
    BANNER,
    CALL,
    CAN_GO_LIVE,
    GOING_LIVE,
    HANGING,
    IDLE,
    LIVE,
    LOAD_FAILED,
    PAUSED,
    RECORDING,
    SCRIPTS,
    SEARCH,
    SPARE,
    STREAMING,
    UNBOUND,
    UNFINISHED,
    ZOOMED,
)

AREAS = ("Move", "Stepping", "Calls", "Pace", "Search", "Scenario", "App", "Override editor",
         "Review")
"""Areas in the order the help screen and docs/keys.md list them."""
OTHER = "Other"
"""The area of a binding the table does not describe."""


@dataclass(frozen=True, slots=True)
class Key:
    """One action: its keys (Textual key names), what it runs, and how it is shown."""

    keys: str
    """Comma-separated Textual key names; the first one is shown."""
    action: str
    label: str
    """Short footer label: says what the key does."""
    help: str
    """One sentence for the help screen, the palette and docs/keys.md."""
    area: str
    display: str | None = None
    """How the key reads on screen (default: Textual's display of the first key)."""
    footer: bool = False
    """Always shown in its screen's footer (only what fits at 80 columns)."""
    moments: tuple[str, ...] = ()
    """The moments the main screen's context footer offers this key in (``headless.moments``:
    a call paused, recording, nothing bound, the focused pane, ...)."""
    first: bool = False
    """Offered before the other keys of its moments (the demo agent while nothing is bound: on a
    narrow footer the key a newcomer needs is the last to go)."""
    palette: bool = True
    """Offered in the command palette."""
    priority: bool = False
    bound: bool = True
    """False for keys Textual already binds (the palette's ctrl+p, Tab)."""

    def binding(self) -> Binding:
        """The Textual binding (its tooltip carries the help sentence)."""
        return Binding(self.keys, self.action, self.label, show=self.footer, key_display=self.display,
                       tooltip=self.help, priority=self.priority)


LIST_KEYS: tuple[Key, ...] = (
    Key("up", "cursor(-1)", "Up", "Move the selection up in the focused list.", "Move",
        display="↑", palette=False),
    Key("down", "cursor(1)", "Down", "Move the selection down in the focused list.", "Move",
        display="↓", palette=False),
    Key("pageup", "page(-1)", "Page up", "Move a page up.", "Move", display="PgUp", palette=False),
    Key("pagedown", "page(1)", "Page down", "Move a page down.", "Move", display="PgDn", palette=False),
    Key("home", "jump(0)", "Top", "Jump to the first row.", "Move", display="Home", palette=False),
    Key("end", "jump(-1)", "Bottom", "Jump to the last row.", "Move", display="End", palette=False),
    Key("enter", "open_detail", "Open", "Open the selected row whole (a log line, a chunk, a session, "
        "a call, the error banner) with copy to the clipboard.", "Move", display="Enter",
        palette=False, moments=(BANNER,)),
)
"""Keys of every list (scripts, chunks, sessions, event log, raw JSON; Enter on the banner)."""

LIVE_KEYS: tuple[Key, ...] = (
    Key("left,right", "switch_list", "Sessions/log", "In Live: move between the bound sessions "
        "and the event log.", "Move", display="←→", palette=False, moments=(LIVE,)),
)
"""Keys of the Live pane's two lists."""

MAIN_KEYS: tuple[Key, ...] = (
    Key("tab", "focus_pane(1)", "Next pane", "Move focus to the next pane, straight to its list "
        "(the focused pane's border is heavy); keys that act on a call use the one selected in "
        "the scripts, named in the call pane's title.", "Move", display="Tab", palette=False),
    Key("shift+tab", "focus_pane(-1)", "Previous pane", "Move focus to the previous pane.", "Move",
        display="Shift+Tab", palette=False),
    Key("f2", "pane('scripts')", "Scripts", "Focus the scripts pane.", "Move", display="F2"),
    Key("f3", "pane('call')", "Call", "Focus the call pane (its current tab).", "Move",
        display="F3"),
    Key("f4", "pane('live')", "Live", "Focus the Live pane.", "Move", display="F4"),
    Key("z", "zoom", "Zoom", "Maximise the focused pane, or restore the layout (Tab and F2-F4 "
        "move the zoom to another pane).", "Move", moments=(ZOOMED, SPARE)),
    Key("1", "mode('run')", "Run", "Step mode run: calls stream without stopping.", "Stepping"),
    Key("2", "mode('call')", "Break at calls", "Step mode: hold every call before its first chunk.",
        "Stepping", moments=(UNBOUND,)),
    Key("3", "mode('chunk')", "Break at chunks", "Step mode: hold every call before each chunk.",
        "Stepping", moments=(UNBOUND,)),
    Key("n", "step('chunk')", "Next chunk", "Release one chunk of the paused call (the call pane "
        "shows its chunks, the one released highlighted).", "Stepping", moments=(PAUSED,)),
    Key("e", "step('call')", "End call", "Release the paused call to its end.", "Stepping",
        moments=(PAUSED,)),
    Key("c", "resume", "Continue", "Continue: back to run mode, every paused call released.",
        "Stepping", moments=(PAUSED,)),
    Key("p", "pause", "Pause", "Hold the selected session's streaming call before its next chunk.",
        "Stepping", moments=(STREAMING,)),
    Key("b", "breakpoint", "Breakpoint", "Toggle a breakpoint on the selected call.", "Calls",
        moments=(SCRIPTS,)),
    Key("x", "cancel", "Cancel call", "Cancel the selected session's call in flight (a hang or a "
        "paused stream): the agent gets ABORTED.", "Calls", moments=(PAUSED, HANGING)),
    Key("X", "cancel_hanging", "Cancel hangs", "Cancel every hanging call of every run.", "Calls",
        moments=(HANGING,)),
    Key("right_square_bracket", "tab(1)", "Next tab", "Show the next call-pane tab.", "Calls",
        display="]", moments=(CALL,)),
    Key("left_square_bracket", "tab(-1)", "Previous tab", "Show the previous call-pane tab.", "Calls",
        display="["),
    Key("plus,equals_sign", "pace(-1)", "Faster", "Pace one step faster: fixed 1000, 250, 100, 50, "
        "20, 5, 0 ms per chunk; recorded gaps x0.25 up to x10.", "Pace", display="+"),
    Key("minus", "pace(1)", "Slower", "Pace one step slower.", "Pace", display="-"),
    Key("t", "pace_recorded", "Recorded pace", "Switch between the recorded gaps and a fixed pace.",
        "Pace"),
    Key("slash", "search", "Search", "Search: filter the scripts (text, tool:NAME, kind:KIND, "
        "origin:ORIGIN) and mark matches in the chunks and the event log.", "Search",
        display="/", moments=(SPARE,)),
    Key("full_stop", "search_next", "Next match", "Go to the next match in the focused list.",
        "Search", display="."),
    Key("comma", "search_previous", "Previous match", "Go to the previous match in the focused list.",
        "Search", display=","),
    Key("R", "reset", "Reset run", "Reset the run: forget bindings and cursors (the agent starts "
        "again).", "Scenario"),
    Key("r", "next_run", "Next run", "Follow the next run that bound a session (the header names "
        "the run followed; the palette can follow any run).", "Scenario"),
    Key("a", "assert_consumed", "Assert", "Assert consumed: the verdict with every problem, and "
        "what is in flight, paused or aborted.", "Scenario", moments=(IDLE,)),
)
"""Keys of the main screen."""

SEARCH_BAR_KEYS: tuple[Key, ...] = (
    Key("enter", "keep_search", "Keep", "In the search box: keep the filter and go back to the "
        "scripts.", "Search", display="Enter", palette=False, priority=True, moments=(SEARCH,)),
    Key("escape", "clear_search", "Clear", "In the search box: clear the search and close it.",
        "Search", display="Esc", palette=False, moments=(SEARCH,)),
)
"""Keys of the search box (typing goes to the box; the footer shows these while it is open)."""

APP_KEYS: tuple[Key, ...] = (
    Key("l", "reload", "Reload", "Reload the scenario from disk now.", "Scenario",
        moments=(LOAD_FAILED,)),
    Key("d", "demo", "Demo agent", "Run the bundled demo agent against the embedded server; it "
        "asks which wire to speak (openai chat completions, anthropic Messages, OpenAI "
        "Responses or Google Gemini), each working on a plain install. While recording it says a "
        "fixed short conversation through the recorder (keys from $OPENAI_API_KEY, "
        "$ANTHROPIC_API_KEY or $GEMINI_API_KEY).", "Scenario", moments=(UNBOUND, RECORDING),
        first=True),
    Key("o", "override", "Override", "Edit replay.override.json at the selected primary call (or "
        "decide the unfinished call of a scenario that does not load).", "Scenario",
        moments=(UNFINISHED,)),
    Key("E", "open_in_editor", "Open in $EDITOR", "Open replay.override.json in $VISUAL or $EDITOR, "
        "then reload; after a load error, the file at the line it names (in the event log, the "
        "file and line the selected line names).", "Scenario", moments=(LOAD_FAILED,)),
    Key("s", "stop_recording", "Stop and replay", "Record mode (--record --upstream URL): stop "
        "recording, finish the logs and load the directory as a scenario ready to replay (q while "
        "recording finishes the logs and quits).", "Scenario", moments=(RECORDING,)),
    Key("L", "go_live", "Go live", "With --upstream URL (no --record): send the selected call (the "
        "first diverged one when no call is selected) and the rest of its session to the "
        "upstream, shown in Live as they are recorded; a call already served resets the run, "
        "so the agent runs again.", "Scenario", moments=(CAN_GO_LIVE,)),
    Key("V", "review_live", "Review", "After going live: stop, and review the new calls beside "
        "the old ones, then keep them (installed, the old files kept as .bak.N) or discard "
        "them.", "Scenario", moments=(GOING_LIVE,)),
    Key("question_mark", "help", "Help", "Show every key by area.", "App", display="?", footer=True),
    Key("ctrl+p", "command_palette", "Palette", "Open the command palette: every action, the theme "
        "and the pace, searchable.", "App", display="^p", palette=False, bound=False,
        moments=(SPARE,)),
    Key("q", "quit", "Quit", "Quit and print the assert-consumed verdict, one line per run (exit 0 "
        "consumed, 3 not, 1 never loaded, 4 port busy); while recording, finish the logs and "
        "quit.", "App", footer=True),
)
"""Keys of the app (they work on the main screen; the palette lists them too)."""

EDITOR_KEYS: tuple[Key, ...] = (
    Key("ctrl+s", "save", "Save", "Save replay.override.json as the editor shows it (never writes an "
        "invalid document; a broken sidecar saves once it has no problem left), then reload.",
        "Override editor", display="^s", footer=True),
    Key("escape", "close", "Close", "Close the editor (asks first when there are unsaved changes).",
        "Override editor", display="Esc", footer=True),
    Key("f1", "help", "Help", "Show the editor's keys and what each kind does.", "Override editor",
        display="F1", footer=True),
    Key("tab", "focus_next", "Next field", "Move to the next field or button.", "Override editor",
        display="Tab", palette=False, bound=False),
)
"""Keys of the override editor (its footer shows them; typing goes to the fields)."""

EDITOR_KIND_KEYS: tuple[Key, ...] = (
    Key("c", "kind('chunks')", "Chunks", "On the kind switch: the call streams its chunks (edit them "
        "in the entry JSON; switching back restores the recorded ones).", "Override editor",
        footer=True, palette=False),
    Key("t", "kind('throw')", "Throw", "On the kind switch: the call streams the first N recorded "
        "chunks, then fails with the code and message.", "Override editor", footer=True,
        palette=False),
    Key("h", "kind('hang')", "Hang", "On the kind switch: the call waits until cancelled (x in the "
        "debugger), creating its readyFile once it waits.", "Override editor", footer=True,
        palette=False),
    Key("left", "step(-1)", "Previous kind", "On the kind switch: select the previous kind.",
        "Override editor", display="←", palette=False),
    Key("right", "step(1)", "Next kind", "On the kind switch: select the next kind.",
        "Override editor", display="→", palette=False),
)
"""Keys of the editor's kind switch (bound on the switch itself, so typing elsewhere is text)."""

REVIEW_KEYS: tuple[Key, ...] = (
    Key("right_square_bracket", "next_change(1)", "Next change", "In the review: jump to the next "
        "call that is not the same.", "Review", display="]", footer=True, palette=False),
    Key("left_square_bracket", "next_change(-1)", "Previous change", "In the review: jump to the "
        "previous call that is not the same.", "Review", display="[", footer=True,
        palette=False),
    Key("k", "keep", "Keep", "In the review: install the new calls (validated first; the old "
        "files kept as .bak.N).", "Review", footer=True, palette=False),
    Key("x", "discard", "Discard", "In the review: drop the new calls; the scenario stays as it "
        "is.", "Review", footer=True, palette=False),
)
"""Keys of the review screen (old and new calls side by side)."""

TABLE: tuple[Key, ...] = (LIST_KEYS + LIVE_KEYS + MAIN_KEYS + SEARCH_BAR_KEYS + APP_KEYS
                          + EDITOR_KEYS + EDITOR_KIND_KEYS + REVIEW_KEYS)


BindingList = list[Binding | tuple[str, str] | tuple[str, str, str]]
"""The type Textual declares ``BINDINGS`` with."""


def bindings(keys: Iterable[Key]) -> BindingList:
    """Textual bindings for ``keys``."""
    return [key.binding() for key in keys if key.bound]


def shown_key(key: Key) -> str:
    """How a key reads in the footer and the help (its display, else its first key name)."""
    return key.display or key.keys.split(",")[0]


FOOTER_GAP = 2


def footer_width(keys: Sequence[Key]) -> int:
    """Cells the footer takes for ``keys``: ``KEY Label`` items two cells apart."""
    return sum(len(shown_key(k)) + 1 + len(k.label) for k in keys) + FOOTER_GAP * max(len(keys) - 1, 0)


def footer_keys(keys: Sequence[Key], moments: Sequence[str], width: int, *,
                always: bool = True) -> list[Key]:
    """The keys the context footer shows within ``width`` cells: those of ``moments`` in that
    order (state first, then the focused pane; within a moment the keys marked ``first`` lead),
    then spare ones while room is left; the keys marked ``footer`` last (unless not ``always``:
    while typing goes to a box)."""
    shown = [k for k in keys if k.footer] if always else []
    always_keys = shown
    wanted: list[Key] = []
    for moment in (*moments, *((SPARE,) if always else ())):
        offered = [k for k in keys if moment in k.moments and k not in wanted and not k.footer]
        wanted += sorted(offered, key=lambda k: not k.first)  # stable: table order otherwise
    chosen: list[Key] = []
    for key in wanted:
        if footer_width([*chosen, key, *always_keys]) <= width:
            chosen.append(key)
    return chosen + always_keys


def describe(action: str) -> Key | None:
    """The table's entry for an action (None for bindings the table does not describe)."""
    for key in TABLE:
        if key.action == action:
            return key
    return None


def textual_builtin(node: object, binding: Binding) -> bool:
    """Whether ``binding`` comes from one of Textual's own classes (scrolling, focus, copy): the
    help lists those through the table, not one by one."""
    for cls in type(node).__mro__:
        if not cls.__module__.startswith("textual."):
            continue
        for declared in cls.__dict__.get("BINDINGS", ()):
            if isinstance(declared, Binding) and declared.action == binding.action:
                return True
            if isinstance(declared, tuple) and len(declared) >= 2 and declared[1] == binding.action:
                return True
    return False


def key_display(binding: Binding, fallback: str) -> str:
    """How a binding's key reads on screen."""
    key = describe(binding.action)
    if binding.key_display:
        return binding.key_display
    if key is not None and key.display:
        return key.display
    return fallback


def grouped(items: Sequence[tuple[str, str, str]]) -> list[tuple[str, list[tuple[str, str]]]]:
    """(area, key, help) triples grouped by area in AREAS order, unknown areas last."""
    order = {area: i for i, area in enumerate(AREAS)}
    sections: dict[str, list[tuple[str, str]]] = {}
    for area, keys, text in items:
        rows = sections.setdefault(area, [])
        if (keys, text) not in rows:
            rows.append((keys, text))
    return sorted(sections.items(), key=lambda kv: order.get(kv[0], len(order)))


def markdown() -> str:
    """The docs' key map (docs/keys.md): one table per area, from the table above."""
    merged: dict[tuple[str, str], list[str]] = {}
    for key in TABLE:
        merged.setdefault((key.area, key.help), []).append(key.display or key.keys.split(",")[0])
    items = [(area, " ".join(f"`{k}`" for k in keys), text) for (area, text), keys in merged.items()]
    lines = ["| area | key | action |", "|---|---|---|"]
    for area, rows in grouped(items):
        for keys, text in rows:
            lines.append(f"| {area} | {keys} | {text} |")
    return "\n".join(lines)


BEGIN = "<!-- keymap:begin (generated by python -m dsh_replay_tui.keymap docs/keys.md) -->"
END = "<!-- keymap:end -->"


def readme_with_keymap(text: str) -> str:
    """``text`` with the block between BEGIN and END replaced by :func:`markdown`."""
    head, sep, rest = text.partition(BEGIN)
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise ValueError(f"the page has no {BEGIN} … {END} block")
    return f"{head}{BEGIN}\n{markdown()}\n{END}{tail}"


def main(argv: Sequence[str]) -> int:
    """Rewrite the key map of the page given as the only argument (docs/keys.md)."""
    if len(argv) != 1:
        print("usage: python -m dsh_replay_tui.keymap docs/keys.md", file=sys.stderr)
        return 2
    path = Path(argv[0])
    atomic_write(path, readme_with_keymap(path.read_text(encoding="utf-8")).encode())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
