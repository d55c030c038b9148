"""The text a failing replayed test shows: what went wrong, where the agent left the recording,
and the commands that open the scenario in the debugger.

Built from plain data (the first divergence as JSON, the refused calls, the consumed problems) so
the same report serves an in-process engine and a debugger in another process.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..context import live_new_messages, recorded_context
from ..divergence import divergence
from ..engine.state import session_label
from ..engine.verdict import call_label
from ..models import SessionScript


@dataclass(frozen=True, slots=True)
class RefusedCall:
    """A model call the engine could not bind (unrecorded session, exhausted script)."""

    session: str | None
    code: str
    message: str
    messages: Any
    script_index: int | None
    call_index: int | None
    dialect: str | None = None
    """The wire the request arrived on (how its messages are read)."""
    retry: bool = False
    """The call was a client's retry (of the call before it, which failed as scripted)."""


def _script_name(script: SessionScript) -> str:
    return Path(script.file).name if script.file else "the sidecar"


def _diff(scripts: Sequence[SessionScript], script_index: int | None, call_index: int,
          messages: Any, dialect: str | None = None) -> str | None:
    """One line: how the live request's new messages differ from the recorded ones there."""
    live = live_new_messages(messages, dialect)
    if script_index is None or script_index >= len(scripts):
        recorded = []
    else:
        found = recorded_context(scripts[script_index], call_index)
        if found is None:
            return None  # a sidecar entry: the log holds no context for it
        recorded = found
    first = divergence(live, recorded)
    return first.describe() if first is not None else None


def describe_refused(scripts: Sequence[SessionScript], refused: RefusedCall) -> list[str]:
    """A binding error: the error, the live call with its recorded turn/step, and the diff
    (calls numbered from 0, as the engine and the debugger number them)."""
    lines = [f"binding error {refused.code}: {refused.message}"]
    who = session_label(refused.session)
    si, ci = refused.script_index, refused.call_index
    if si is None or ci is None or si >= len(scripts):
        names = ", ".join(_script_name(s) for s in scripts) or "none"
        lines.append(f"  call: the first call of {who}; the recorded sessions ({names}) are all "
                     "bound already")
        diff = _diff(scripts, None, 0, refused.messages, refused.dialect)
    else:
        script = scripts[si]
        last = len(script.entries) - 1
        where = (f"its last recorded call is #{last}{_turn_step(scripts, si, last)}"
                 if last >= 0 else "the script records no call")
        if refused.retry and ci > 0:
            lines.append(f"  call: {who}: a retry of call #{ci - 1} of script {si} "
                         f"({_script_name(script)}), which failed as scripted; the recording has "
                         f"no call after it")
        else:
            lines.append(f"  call: {who}: call #{ci} of script {si} ({_script_name(script)}): "
                         f"past the recording; {where}")
        diff = _diff(scripts, si, ci, refused.messages, refused.dialect)
    if diff is not None:
        lines.append(f"  diff: {diff}")
    return lines


def _turn_step(scripts: Sequence[SessionScript], si: int, ci: int) -> str:
    """`` (turn/step 1/2)`` of a recorded call, as ``call_label`` words it."""
    label = call_label(scripts, si, ci)
    return label[label.index(" ("):] if " (" in label else ""


def first_divergence(scripts: Sequence[SessionScript], first: dict[str, Any] | None) -> str | None:
    """The run's first divergence (the engine's ``first_divergence_json``: its one rule, which
    holds past the journal's limit), worded as the engine's verdict words it, with the log it
    is in."""
    if first is None:
        return None
    found, si, ci = first.get("divergence"), first.get("scriptIndex"), first.get("callIndex")
    if not isinstance(found, dict) or not isinstance(si, int) or not isinstance(ci, int):
        return None
    who = session_label(first.get("sessionKey"))
    where = f" in {_script_name(scripts[si])}" if si < len(scripts) else ""
    return f"first divergence: {who}: {call_label(scripts, si, ci)}{where}: {found.get('text')}"


REPAIR_HINT = ("repair it from there: rerun with --dsh-replay-record=from_divergence "
               "--dsh-replay-upstream URL (the recorded calls before it replay, the rest is "
               "recorded), or dsh-replay record {scenario} --upstream URL --from-divergence")
"""The line a diverged replay's failure adds: how to record from the divergence."""


def display_path(path: Path, base: Path) -> str:
    """``path`` relative to ``base`` when it lies below it, else absolute."""
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)


def rerun_argument(path: Path, nodeid: str, base: Path) -> str:
    """The test as a pytest started in ``base`` selects it: the node id with its file shown
    from ``base`` (a node id's file is relative to the rootdir, which ``base`` may not be)."""
    _, sep, rest = nodeid.partition("::")
    return display_path(path, base) + sep + rest


def debugger_hint(scenario: Path, test: str, base: Path) -> list[str]:
    """The commands that open the scenario in the debugger and rerun ``test`` (as
    ``rerun_argument`` gives it) inside one."""
    shown = shlex.quote(display_path(scenario, base))
    return [
        f"open the scenario in the debugger: dsh-replay-tui {shown}",
        f"step through this test in it:      pytest --dsh-replay-debug {shlex.quote(test)}",
    ]


def failure_report(
    scenario: str,
    run: str | None,
    scripts: Sequence[SessionScript],
    first: dict[str, Any] | None,
    refused: Sequence[RefusedCall],
    unconsumed: Sequence[str],
    problems: Sequence[str],
    *,
    failed: bool = False,
) -> list[str]:
    """Every problem of one scenario's run in a test, one item per line (empty: none): binding
    errors, the ``unconsumed`` problems (docs/format.md#binding) (said so), the verdict's other ``problems``;
    the first divergence always goes with them, and alone when the test ``failed`` by itself."""
    lines: list[str] = []
    for call in refused:
        lines.extend(describe_refused(scripts, call))
    lines.extend(f"not consumed: {problem}" for problem in unconsumed)
    lines.extend(problems)
    divergence = first_divergence(scripts, first)
    if not lines and not (failed and divergence is not None):
        return []
    verb = "failed:" if lines else "left the recording:"  # problems, or the divergence alone
    if divergence is not None:
        lines.append(divergence)
        lines.append(REPAIR_HINT.format(scenario=shlex.quote(scenario)))
    head = f"dsh-replay: the replay of {scenario}" + (f" (run {run})" if run else "") + f" {verb}"
    return [head, *(f"  {line}" for line in lines)]
