"""The verdict: whether a run replayed the recording, with every reason it did not.

``consumed_problems`` is the binding check alone (every script claimed, every cursor at its end),
in the words of docs/format.md#binding. ``verdict_problems`` is what every front end reports (the engine's
``assert_consumed``, the control API, ``serve``'s exit status, the debugger, the pytest plugin):
the unconsumed problems (docs/format.md#binding), then calls refused at binding, calls still in flight, paused
or hanging, streams that ended before their last chunk (a hang's cancel is its normal end), and, in strict
mode, calls whose request left the recording and retries the recording does not have.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import SCRIPT_EXHAUSTED
from ..models import SessionScript
from .state import Binding, CallRecord, Run, first_diverged, script_length, session_label


def consumed_problems(scripts: Sequence[SessionScript], run: Run) -> list[str]:
    """Every reason ``run`` is not consumed by the binding rule (docs/format.md#binding); empty when it is."""
    problems: list[str] = []
    unbound = len(scripts) - len(run.bindings)
    if unbound > 0:
        problems.append(f"{unbound} recorded script(s) never bound to a live session")
    for b in run.bindings.values():
        total = script_length(scripts, b.script_index)
        if b.cursor < total:
            problems.append(f"{session_label(b.key)} consumed {b.cursor}/{total} "
                            "recorded call(s)")
    return problems


def call_label(scripts: Sequence[SessionScript], script_index: int | None,
               call_index: int | None) -> str:
    """``call #2 of script 0 (turn/step 1/3)``: a call with its recorded turn/step."""
    if script_index is None or call_index is None:
        return "its first call"
    label = f"call #{call_index} of script {script_index}"
    if script_index < len(scripts) and call_index < len(scripts[script_index].entries):
        key = scripts[script_index].entries[call_index].call_key
        label += f" (turn/step {key})" if key is not None else " (a sidecar entry)"
    return label


def refused_label(scripts: Sequence[SessionScript], record: CallRecord) -> str:
    """What a refused call was: ``a retry of call #k …`` for a client's retry of the script's
    last call after its scripted failure, else the call it asked for (``call_label``)."""
    ci = record.call_index
    if record.retry and record.code == SCRIPT_EXHAUSTED and ci is not None and ci > 0:
        return "a retry of " + call_label(scripts, record.script_index, ci - 1)
    return call_label(scripts, record.script_index, ci)


def _flight(scripts: Sequence[SessionScript], b: Binding) -> list[str]:
    out: list[str] = []
    who = session_label(b.key)
    call = b.call
    if call is not None:
        label = call_label(scripts, b.script_index, call.call_index)
        if call.status == "paused":
            out.append(f"{who}: {label} is paused before chunk {call.served} (still in flight)")
        elif call.status == "hanging":
            out.append(f"{who}: {label} is hanging until cancelled (still in flight)")
        else:
            out.append(f"{who}: {label} is still in flight ({call.served} chunk(s) served)")
    for cut in b.unfinished:
        label = call_label(scripts, b.script_index, cut.call_index)
        if cut.failed:
            out.append(f"{who}: {label} {cut.why}")
        else:
            out.append(f"{who}: {label} ended after {cut.served} of its {cut.total} chunk(s): "
                       f"{cut.why}")
    return out


def verdict_problems(scripts: Sequence[SessionScript], run: Run, *, strict: bool = False,
                     unconsumed: bool = True, refused: bool = True) -> list[str]:
    """Every reason the run did not replay the recording; empty when it did.

    ``unconsumed=False`` leaves out the unconsumed problems of docs/format.md#binding (a test that
    may stop early) and ``refused=False`` the refused calls (a caller that reports them in its own detail).
    """
    problems = consumed_problems(scripts, run) if unconsumed else []
    for record in run.refused if refused else ():
        problems.append(f"{session_label(record.session)}: {refused_label(scripts, record)} was "
                        f"refused with {record.code}: {record.message}")
    hidden = run.refused_count - len(run.refused)
    if refused and hidden > 0:
        problems.append(f"… and {hidden} more refused call(s)")
    for b in run.bindings.values():
        problems.extend(_flight(scripts, b))
    if strict:
        for b in run.bindings.values():
            who = session_label(b.key)
            for index, found, _ in b.diverged:
                problems.append(f"{who}: {call_label(scripts, b.script_index, index)} left the "
                                f"recording (strict): {found.describe()}")
            for index, recorded in b.retries:
                if not recorded:
                    problems.append(
                        f"{who}: {call_label(scripts, b.script_index, index)} is a retry of the "
                        "failed call before it, and the recording has no such retry (strict): "
                        "the retry took the next recorded call")
    return problems


def first_divergence(scripts: Sequence[SessionScript], run: Run) -> str | None:
    """The run's first divergence (``first_diverged``), on one line (None: the run never left
    the recording as far as the recorded context shows)."""
    first = first_diverged(run.bindings.values())
    if first is None:
        return None
    b, index, found = first
    return f"{session_label(b.key)}: {call_label(scripts, b.script_index, index)}: {found.describe()}"


def first_divergence_json(run: Run) -> dict[str, Any] | None:
    """The run's first divergence (``first_diverged``) as JSON: ``sessionKey``, ``scriptIndex``,
    ``callIndex`` and ``divergence`` in the journal's form (None: the run never left the
    recording); what a verdict file carries to a process without the engine."""
    first = first_diverged(run.bindings.values())
    if first is None:
        return None
    b, index, found = first
    return {"sessionKey": b.key, "scriptIndex": b.script_index, "callIndex": index,
            "divergence": found.to_json()}
