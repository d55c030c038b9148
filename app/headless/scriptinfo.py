"""What the debugger says about a script as a whole: the file and session-format generation it
came from, older generations that were ignored, its bound session and how it was bound, and the
``{{session:N}}`` tokens of its entries with the live id each stands for once bound."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rich.text import Text

from replay_engine import (
    TOKEN_MARKER,
    BindingState,
    RunState,
    Scenario,
    SessionScript,
    generation_label,
)

RULE_WORDS = {"announced": "its parent announced it", "content": "its first request matched",
              "order": "first-call order"}
"""How each binding rule (the journal's ``boundBy``) reads."""


def live_ids(state: RunState) -> dict[int, str]:
    """The live session id bound to each script index (what ``{{session:N+1}}`` becomes)."""
    return {b.script_index: b.session for b in state.bindings if b.session is not None}


def show_tokens(text: str, ids: Mapping[int, str]) -> str:
    """``text`` with each ``{{session:N}}`` whose session is bound followed by its live id
    (``{{session:2}}=child-7``); unbound tokens stay as they are."""
    if TOKEN_MARKER not in text:
        return text
    out: list[str] = []
    rest = text
    while (at := rest.find(TOKEN_MARKER)) >= 0:
        out.append(rest[:at])
        rest = rest[at:]
        digits = rest[len(TOKEN_MARKER):].split("}}", 1)[0]
        token = f"{TOKEN_MARKER}{digits}}}}}"
        if digits.isdigit() and rest.startswith(token):
            live = ids.get(int(digits) - 1)
            out.append(token + (f"={live}" if live is not None else ""))
            rest = rest[len(token):]
        else:
            out.append(TOKEN_MARKER)
            rest = rest[len(TOKEN_MARKER):]
    out.append(rest)
    return "".join(out)


def source_label(script: SessionScript) -> str | None:
    """The log a script came from with its generation (``session.v4.jsonl (v4)``); None for a
    primary written by the sidecar alone."""
    if not script.file:
        return None
    return f"{Path(script.file).name} ({generation_label(script.file)})"


def ignored_note(scenario: Scenario) -> str | None:
    """The older generations present beside the logs read, and never read (None: none)."""
    if not scenario.ignored:
        return None
    return "ignored older generations: " + ", ".join(
        f"{p.name} ({generation_label(p)})" for p in scenario.ignored)


def bound_words(binding: BindingState) -> str:
    """How a session claimed its script, in words."""
    return f"bound by {binding.rule} ({RULE_WORDS.get(binding.rule, binding.rule)})"


def script_facts(scenario: Scenario, index: int, binding: BindingState | None) -> Text:
    """Everything about script ``index`` (what the call pane shows while its row is selected)."""
    script = scenario.scripts[index]
    calls = len(script.entries)
    ids = {binding.script_index: binding.session} if binding and binding.session else {}
    text = Text(f"[{index}] {'primary' if script.primary else 'child'} "
                f"{show_tokens(script.recorded_id, ids) or '(no id)'}", style="bold")
    text.append(f"\n{calls} call{'s' if calls != 1 else ''}: select one (↓) for its output, "
                "chunks, request and raw JSON", style="italic")
    source = source_label(script)
    text.append(f"\nfile       {script.file} — {source}" if source else
                "\nfile       none: the sidecar alone writes this script")
    text.append(f"\ncreatedAt  {script.created_at:.0f}")
    text.append(f"\nseedLength {script.seed_length:g}")
    if binding is not None:
        key = binding.session if binding.session is not None else "(anonymous)"
        text.append(f"\nbound to   {key}, {bound_words(binding)}; cursor "
                    f"{binding.cursor}/{binding.length}, {binding.status}", style="cyan")
    else:
        text.append("\nbound to   no live session yet", style="dim")
    text.append(f"\ntoken      {{{{session:{index + 1}}}}} in served entries stands for this "
                "session's live id", style="dim")
    note = ignored_note(scenario)
    if note is not None:
        text.append(f"\n{note}", style="yellow")
    if script.untimed:
        text.append(f"\n{script.untimed} chunk record(s) without a time: recorded pace has no "
                    "gaps there", style="dim")
    return text
