"""What the override editor's buttons do to a draft, and the texts it shows, without Textual.

Each edit command returns an :class:`EditOutcome`: the line for the status bar and the call
the editor shows next (or the error to show instead)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from replay_engine import (
    AnyEntry,
    ChunksEntry,
    EntryTextError,
    OverrideDraft,
    ReplayError,
    SidecarError,
    entry_to_json,
    throw_code_warning,
)

CHILD_NOTE = (
    "Override sidecars (replay.override.json) apply to the primary session only; a child "
    "script is always served exactly as recorded. Select a call of the primary script to edit it."
)


def first_problem(exc: ReplayError) -> str:
    """The first line of an error, or the entry-JSON problem with its line and column."""
    if isinstance(exc, EntryTextError) and exc.problems:
        p = exc.problems[0]
        where = f"{p.location}: " if p.location else ""
        more = f" (+{len(exc.problems) - 1} more)" if len(exc.problems) > 1 else ""
        return f"line {p.line}, column {p.column}: {where}{p.message}{more}"
    problems = getattr(exc, "problems", None)
    if isinstance(problems, list) and problems and isinstance(problems[0], str):
        return problems[0]
    return exc.message.splitlines()[0]


def entry_text(entry: AnyEntry | None) -> str:
    """The editor pane's text for an entry (2-space JSON)."""
    return "" if entry is None else json.dumps(entry_to_json(entry), indent=2, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class EditOutcome:
    """The status line after an edit, and the call to select (ignored on an error)."""

    message: str
    select: int = 0
    error: bool = False


def _failed(exc: SidecarError) -> EditOutcome:
    return EditOutcome(first_problem(exc), error=True)


def _with_undecided(draft: OverrideDraft, describe: str) -> str:
    left = sorted(draft.undecided.items())
    if left:
        describe += " Still to decide before saving: " + ", ".join(
            f"#{i} ({e.call_key})" for i, e in left) + "."
    return describe


def throw_here(draft: OverrideDraft, index: int, message: str, code: str, prefix_text: str) -> EditOutcome:
    """Call ``index`` throws ``code`` after its first ``prefix_text`` recorded chunks."""
    prefix_text = prefix_text.strip() or "0"
    try:
        prefix = int(prefix_text)
    except ValueError:
        return EditOutcome(f"keep first: {prefix_text!r} is not a whole number.", error=True)
    try:
        draft.throw_here(index, message, code, prefix)
    except SidecarError as exc:
        return _failed(exc)
    said = f"call #{index} now throws {code} after {prefix} chunk(s)."
    warning = throw_code_warning(code)
    if warning is not None:
        said += f" Warning: {warning}."
    return EditOutcome(_with_undecided(draft, said), index)


def hang_here(draft: OverrideDraft, index: int, ready_text: str) -> EditOutcome:
    """Call ``index`` hangs until cancelled (creating ``ready_text`` as its readyFile, if given)."""
    ready = ready_text.strip() or None
    try:
        draft.hang_here(index, ready)
    except SidecarError as exc:
        return _failed(exc)
    return EditOutcome(_with_undecided(draft, f"call #{index} now hangs until cancelled"
                                              + (f" (readyFile {ready})." if ready else ".")), index)


def append_copy(draft: OverrideDraft, index: int) -> EditOutcome:
    """Append a call that streams the recorded chunks of call ``index``."""
    recorded = list(draft.recorded_chunks(index)) if draft.effective() else []
    try:
        appended = draft.append(ChunksEntry(chunks=recorded))
    except SidecarError as exc:
        return _failed(exc)
    return EditOutcome(f"appended call #{appended} (a copy of the recorded call's chunks; edit it "
                       "above).", appended)


def remove_at(draft: OverrideDraft, index: int) -> EditOutcome:
    """Drop the patch of call ``index`` (or, in the list form, the entry itself)."""
    try:
        draft.remove(index)
    except SidecarError as exc:
        return _failed(exc)
    return EditOutcome(f"call #{index}: patch removed." if draft.form == "patches"
                       else f"entry #{index} removed from the list.",
                       max(0, min(index, len(draft.effective()) - 1)))
