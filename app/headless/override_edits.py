"""What the override editor's form and buttons do to a draft, and the texts it shows, without
Textual.

The form (a kind and its fields) is another view of the entry JSON: :func:`form_of` fills it from
an entry, :func:`form_document` turns it back into the entry's JSON. Each button command returns
an :class:`EditOutcome`: the line for the status bar and the call the editor shows next (or the
error to show instead)."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Literal

from replay_engine import (
    AnyEntry,
    ChunksEntry,
    EntryProblem,
    EntryTextError,
    HangEntry,
    OverrideDraft,
    ReplayError,
    SidecarError,
    ThrowEntry,
    entry_to_json,
    known_throw_codes,
    throw_code_warning,
)

Kind = Literal["chunks", "throw", "hang"]
KINDS: tuple[Kind, ...] = ("chunks", "throw", "hang")
"""The entry kinds, in the order the editor's toggle shows them."""

EDITOR_HELP = (
    "Kinds: chunks streams the chunks in the entry JSON and finishes; throw streams the first N "
    "recorded chunks (keep first), then fails with the code and message; hang waits until "
    "cancelled (x in the debugger), creating its readyFile once it waits. The switch shows the "
    "kind of the call; its fields and the entry JSON are two views of one entry, so editing "
    "either updates the other and the preview, and ^s saves what they show. Known throw codes: "
    f"{known_throw_codes()}; any other code is served as 500 (the editor warns). Append call "
    "adds a call after the last one (a retry after a throw); Remove patch serves the call as "
    "recorded again."
)
"""The editor's own note under its keys (F1)."""

RAW_HELP = (
    "The sidecar does not load, so it opens as text: every problem is listed with its line, "
    "column and JSON location, and checked again as you type. Enter on a problem puts the cursor "
    "there. ^s writes the text as it is once no problem is left (the old file is kept as .bak), "
    "then the scenario reloads; Esc asks before dropping your changes."
)
"""The note under the keys while a broken sidecar is edited as text."""

CHILD_NOTE = (
    "Override sidecars (replay.override.json) apply to the primary session only; a child "
    "script is always served exactly as recorded. Select a call of the primary script to edit it."
)


def problem_line(problem: EntryProblem) -> str:
    """One problem of a JSON text: its line and column, its JSON location, what is wrong."""
    where = f"{problem.location}: " if problem.location else ""
    return f"line {problem.line}, column {problem.column}: {where}{problem.message}"


def first_problem(exc: ReplayError) -> str:
    """The first line of an error, or the entry-JSON problem with its line and column."""
    if isinstance(exc, EntryTextError) and exc.problems:
        more = f" (+{len(exc.problems) - 1} more)" if len(exc.problems) > 1 else ""
        return problem_line(exc.problems[0]) + more
    problems = getattr(exc, "problems", None)
    if isinstance(problems, list) and problems and isinstance(problems[0], str):
        return problems[0]
    return exc.message.splitlines()[0]


def form_problem(exc: EntryTextError) -> str:
    """The first problem of the entry the form says, by field (the form has no lines)."""
    if not exc.problems:
        return first_problem(exc)
    problem = exc.problems[0]
    return f"{problem.location or 'entry'}: {problem.message}"


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


@dataclass(frozen=True, slots=True)
class FormValues:
    """What the editor's form shows: the kind, and the fields of every kind as typed."""

    kind: Kind = "chunks"
    message: str = ""
    code: str = ""
    prefix: str = "0"
    """Recorded chunks a throw keeps, as typed."""
    ready: str = ""
    """A hang's readyFile (empty: none)."""


def form_of(entry: AnyEntry | None, defaults: FormValues) -> FormValues:
    """The form showing ``entry``: its kind and fields; the other kinds' fields from ``defaults``."""
    if isinstance(entry, ThrowEntry):
        return replace(defaults, kind="throw", message=entry.message, code=entry.code,
                       prefix=str(len(entry.chunks)))
    if isinstance(entry, HangEntry):
        return replace(defaults, kind="hang", ready=entry.readyFile or "")
    return replace(defaults, kind="chunks")


def form_document(values: FormValues, shown: FormValues, current: AnyEntry | None,
                  recorded: list[dict[str, Any]]) -> dict[str, Any] | str:
    """The entry JSON the form now says (checked like any typed entry), or why the form cannot
    say one yet.

    ``shown`` is the form as last filled from the entry ``current``: while a throw's prefix is
    unchanged its chunks stay what ``current`` holds (chunks typed in the JSON box survive an
    edit of the message); otherwise a throw keeps the first ``prefix`` of ``recorded``.
    Switching back to chunks streams ``recorded``."""
    if values.kind == "hang":
        ready = values.ready.strip()
        return {"kind": "hang", **({"readyFile": ready} if ready else {})}
    if values.kind == "chunks":
        return {"kind": "chunks", "chunks": list(recorded)}
    if (isinstance(current, ThrowEntry) and shown.kind == "throw"
            and values.prefix == shown.prefix):
        chunks = list(current.chunks)
    else:
        text = values.prefix.strip() or "0"
        try:
            prefix = int(text)
        except ValueError:
            return f"keep first: {text!r} is not a whole number."
        if not 0 <= prefix <= len(recorded):
            return (f"keep first: {prefix} is out of range; this call has {len(recorded)} "
                    f"recorded chunk(s), keep 0..{len(recorded)} (0 fails before any chunk).")
        chunks = list(recorded[:prefix])
    return {"kind": "throw", "chunks": chunks, "message": values.message, "code": values.code}


def serve_entry(draft: OverrideDraft, index: int, entry: AnyEntry) -> bool:
    """Serve ``entry`` at call ``index`` (typing the recorded entry back drops the patch);
    False when the draft already serves exactly that. Raises SidecarError for a bad index."""
    current = draft.entry_at(index)
    if current is not None and entry_to_json(current) == entry_to_json(entry):
        return False
    derived = draft.derived
    if (draft.form == "patches" and derived is not None and index < len(derived)
            and entry_to_json(derived[index].entry) == entry_to_json(entry)):
        draft.remove(index)
    else:
        draft.put(index, entry)
    return True


def undecided_note(draft: OverrideDraft) -> str:
    """What the user must do before saving a draft whose log has calls that never finished."""
    calls = ", ".join(f"#{i} ({e.call_key})" for i, e in sorted(draft.undecided.items()))
    return (f"Call(s) {calls} never finished while recorded: pick throw (keeps what was "
            "streamed) or hang, or give it chunks ending with a finish. It is saved as a bare "
            "list, every other call as recorded.")


def describe_entry(draft: OverrideDraft, index: int) -> str:
    """The status line for call ``index`` as the draft now serves it: what it does, a warning
    for a throw code outside the known set, and the calls still to decide."""
    entry = draft.entry_at(index)
    if isinstance(entry, ThrowEntry):
        said = f"call #{index} now throws {entry.code} after {len(entry.chunks)} chunk(s)."
    elif isinstance(entry, HangEntry):
        said = f"call #{index} now hangs until cancelled" + (
            f" (readyFile {entry.readyFile})." if entry.readyFile else ".")
    elif entry is not None and draft.edited(index):
        said = f"call #{index} now streams {len(entry.chunks)} chunk(s)."
    else:
        said = f"call #{index} is served as recorded."
    warning = entry_warning(entry)
    if warning is not None:
        said += f" Warning: {warning}."
    return _with_undecided(draft, said)


def entry_warning(entry: AnyEntry | None) -> str | None:
    """The warning for a throw whose code clients cannot tell apart (one text for the form, the
    entry JSON and ``dsh-replay override --code``)."""
    return throw_code_warning(entry.code) if isinstance(entry, ThrowEntry) else None


def _with_undecided(draft: OverrideDraft, describe: str) -> str:
    left = sorted(draft.undecided.items())
    if left:
        describe += " Still to decide before saving: " + ", ".join(
            f"#{i} ({e.call_key})" for i, e in left) + "."
    return describe


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
