"""Headless presentation shared by the CLI and the debugger: call summaries, the verdict, exit codes."""

from __future__ import annotations

from typing import Any

from .engine import ReplayEngine
from .models import ChunksEntry, HangEntry, ScriptEntry, ThrowEntry
from .safe_text import printable

EXIT_OK = 0
EXIT_FAILED = 1
"""A command failed on bad input (the error is printed on stderr)."""
EXIT_USAGE = 2
EXIT_NOT_CONSUMED = 3
"""The replay ended with a recorded call not served (``serve`` and the debugger on quit)."""
EXIT_NOT_SERVING = 4
"""The debugger could not listen on its port, so nothing was served."""
EXIT_INTERRUPTED = 130
"""A command stopped by Ctrl-C before it finished (128 + SIGINT, as shells report it)."""

VERDICT_WAITING = "waiting for the agent"
"""A run nobody has called yet: no verdict until a call arrives or the replay ends."""


def summarize_entry(item: ScriptEntry, width: int = 60) -> dict[str, Any]:
    """Kind, chunk count, finish reason and a one-line text/tool summary of one call."""
    entry = item.entry
    chunks = entry.chunks if isinstance(entry, ChunksEntry | ThrowEntry) else []
    finish: str | None = None
    text: list[str] = []
    tools: dict[tuple[Any, Any], str] = {}
    for chunk in chunks:
        kind = chunk.get("type")
        if kind == "text-delta" and isinstance(chunk.get("text"), str):
            text.append(chunk["text"])
        elif kind == "tool-call-delta" and isinstance(chunk.get("name"), str):
            # A name repeated on every delta of one tool block names one call.
            key = (chunk.get("index"), chunk.get("id"))
            tools.setdefault(key if all(isinstance(k, str | int | float | None) for k in key)
                             else (repr(key[0]), repr(key[1])), chunk["name"])
        elif kind == "block-end":
            block = chunk.get("block")
            if isinstance(block, dict) and not text and block.get("type") == "text":
                if isinstance(block.get("text"), str):
                    text.append(block["text"])
        elif kind == "finish":
            reason = chunk.get("reason")
            if isinstance(reason, dict):
                finish = str(reason.get("kind"))
                if reason.get("kind") == "error" and reason.get("code"):
                    finish += f" ({reason.get('code')})"
    parts: list[str] = []
    joined = " ".join("".join(text).split())
    if joined:
        parts.append(joined if len(joined) <= width else joined[: width - 1] + "…")
    if tools:
        parts.append("tools: " + ", ".join(tools.values()))
    if isinstance(entry, ThrowEntry):
        parts.append(f"throws {entry.code}: {entry.message}")
        finish = finish or f"throw {entry.code}"
    if isinstance(entry, HangEntry):
        parts.append("hangs until cancelled" + (f" (readyFile {entry.readyFile})"
                                                  if entry.readyFile else ""))
        finish = "hang"
    return {
        "kind": entry.kind,
        "origin": item.origin,
        "chunks": len(chunks),
        "finish": finish,
        "summary": "; ".join(parts),
        "callKey": item.call_key,
    }


def verdict(engine: ReplayEngine) -> tuple[bool, list[str]]:
    """Assert-consumed over every run that bound a session (the default run when none did)."""
    lines: list[str] = []
    ok = True
    for run in engine.verdict_runs():
        problems = engine.verdict_problems(run)
        label = printable(f"run {run}")
        if problems:
            ok = False
            lines.append(f"replay NOT consumed ({label}):")
            lines.extend(f"  - {printable(p)}" for p in problems)
        else:
            lines.append(f"replay consumed ({label})")
        note = divergence_note(engine, run)
        if note is not None:
            lines.append(f"  {note}")
    return ok, lines


def divergence_note(engine: ReplayEngine, run: str) -> str | None:
    """``first divergence: …`` of a run, printable on one line (None: it never left the
    recording); every verdict shows it in these words."""
    diverged = engine.first_divergence(run)
    return None if diverged is None else f"first divergence: {printable(diverged)}"


def verdict_text(problems: list[str], scripts: int, run: str | None = None) -> str:
    """The debugger's verdict for one run (named when given), as its modal and event log
    show it."""
    head = "assert-consumed" + (f" (run {run})" if run is not None else "")
    if not problems:
        return f"{head}: ok — all {scripts} recorded script(s) fully consumed"
    return f"{head}: NOT consumed\n" + "\n".join(f"  - {p}" for p in problems)


def run_verdict(engine: ReplayEngine, run: str) -> dict[str, Any]:
    """One run's verdict as JSON: every problem, the ``unconsumed`` ones
    (docs/format.md#binding) apart, the first divergence and the journal (what
    ``dsh-replay-tui --verdict-file`` writes on quit, and the pytest plugin reads once the
    debugger let go)."""
    return {"run": run, "problems": engine.verdict_problems(run),
            "unconsumed": engine.consumed_problems(run),
            "firstDivergence": engine.first_divergence_json(run),
            "journal": [record.to_json() for record in engine.journal(run)]}
