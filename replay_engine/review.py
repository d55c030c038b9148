"""Review two scenarios call by call: what a re-recording changed (``dsh-replay diff``).

Scripts are matched in bind order (primary first, then children as they bind) and calls by
index. Each call is compared by what it serves, never by bytes, so scenarios of different log
generations, or one with a sidecar and one without, compare by their effective scripts. A
changed call says which facets differ: ``kind``, ``text``, ``reasoning``, ``toolCalls``
(names and arguments; ids are the provider's and not compared), ``error`` (a throw's message
and code), ``finish``, ``usage``, ``context`` (the recorded request before the call, compared as
``--strict`` compares a live request), ``stream`` (the same content split into other chunks)
and ``timing`` (the recorded gaps). A change of ``usage``, ``stream`` or ``timing`` alone is
marked ``usageOnly`` / ``timingOnly`` so a reviewer can skip it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .context import ContextItem, script_contexts
from .divergence import divergence
from .models import ScriptEntry, SessionScript, entry_to_json
from .scenario.loading import Scenario

FACETS = ("kind", "text", "reasoning", "toolCalls", "error", "finish", "usage", "context",
          "stream", "timing")
"""Every facet a changed call can name, in the order they are reported."""
TIMING_FACETS = frozenset({"stream", "timing"})
USAGE_FACETS = TIMING_FACETS | {"usage"}
SAME, CHANGED, ADDED, REMOVED = "same", "changed", "added", "removed"

Context = tuple[ContextItem, ...] | None


@dataclass(frozen=True, slots=True)
class CallFacts:
    """What one call serves, reduced to what a reviewer reads."""

    kind: str
    text: str
    reasoning: str
    tool_calls: tuple[tuple[str, str], ...]
    """(name, arguments) of each tool call, in block order."""
    error: tuple[str, str] | None
    finish: str | None
    usage: tuple[tuple[str, Any], ...] | None
    chunks: Any
    times: tuple[int, ...] | None

    def summary(self, width: int = 70) -> str:
        """One line: the kind and the first words of what it says."""
        if self.kind == "hang":
            return "hang"
        if self.error is not None and self.kind == "throw":
            return _cap(f"throw {self.error[1]}: {self.error[0]}", width)
        parts = []
        if self.text:
            parts.append(repr(_squeeze(self.text)))
        parts.extend(f"{name}({args})" for name, args in self.tool_calls)
        shown = " ".join(parts) or "(no text)"
        return _cap(shown + (f" [{self.finish}]" if self.finish else ""), width)

    def to_json(self) -> dict[str, Any]:
        """The facts as JSON (what ``--json`` prints for an added, removed or changed call)."""
        return {"kind": self.kind, "text": self.text, "reasoning": self.reasoning,
                "toolCalls": [{"name": n, "arguments": a} for n, a in self.tool_calls],
                "error": None if self.error is None else
                {"message": self.error[0], "code": self.error[1]},
                "finish": self.finish,
                "usage": None if self.usage is None else dict(self.usage)}


def _squeeze(text: str) -> str:
    return " ".join(text.split())


def _cap(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def call_facts(item: ScriptEntry) -> CallFacts:
    """The reviewable facts of one loaded call."""
    entry = entry_to_json(item.entry)
    chunks = entry.get("chunks") or []
    text: list[str] = []
    reasoning: list[str] = []
    tools: dict[int, list[str]] = {}
    finish = None
    usage = None
    for chunk in chunks:
        kind = chunk.get("type")
        if kind == "text-delta":
            text.append(str(chunk.get("text", "")))
        elif kind == "reasoning-delta":
            reasoning.append(str(chunk.get("text", "")))
        elif kind == "tool-call-delta":
            slot = tools.setdefault(int(chunk.get("index", 0)), ["", ""])
            if chunk.get("name"):
                slot[0] = str(chunk["name"])
            slot[1] += str(chunk.get("argumentsDelta", ""))
        elif kind == "usage" and isinstance(chunk.get("usage"), dict):
            usage = tuple(sorted(chunk["usage"].items()))
        elif kind == "finish":
            reason = chunk.get("reason")
            finish = str(reason.get("kind")) if isinstance(reason, dict) else None
    error = None
    if entry.get("kind") == "throw":
        error = (str(entry.get("message", "")), str(entry.get("code", "")))
    times = tuple(item.times) if item.times is not None else None
    return CallFacts(str(entry.get("kind")), "".join(text), "".join(reasoning),
                     tuple((n, a) for _, (n, a) in sorted(tools.items())), error, finish, usage,
                     chunks, times)


@dataclass(frozen=True, slots=True)
class CallDiff:
    """One call of a script pair: its status and, when changed, what changed."""

    index: int
    status: str
    old: CallFacts | None
    new: CallFacts | None
    changes: tuple[str, ...] = ()
    context: str | None = None
    """How the recorded request before the call changed (when ``context`` is among changes)."""

    @property
    def usage_only(self) -> bool:
        """Only usage (and perhaps timing) changed: nothing the agent reads."""
        return bool(self.changes) and "usage" in self.changes \
            and set(self.changes) <= USAGE_FACETS

    @property
    def timing_only(self) -> bool:
        """Only the recorded gaps or the chunk split changed."""
        return bool(self.changes) and set(self.changes) <= TIMING_FACETS

    def details(self) -> list[str]:
        """One line per changed facet: old → new."""
        assert self.old is not None and self.new is not None
        old, new = self.old, self.new
        lines = []
        for facet in self.changes:
            if facet == "context":
                lines.append(f"context: {self.context}")
            elif facet == "stream":
                lines.append(f"stream: {len(old.chunks)} chunks → {len(new.chunks)} chunks "
                             "(same content)")
            elif facet == "timing":
                lines.append(f"timing: {_span(old.times)} → {_span(new.times)}")
            else:
                lines.append(f"{facet}: {_facet_text(old, facet)} → {_facet_text(new, facet)}")
        return lines

    def to_json(self) -> dict[str, Any]:
        """The call as ``--json`` prints it."""
        out: dict[str, Any] = {"index": self.index, "status": self.status}
        if self.status == CHANGED:
            out.update(changes=list(self.changes), usageOnly=self.usage_only,
                       timingOnly=self.timing_only, details=self.details())
            if self.context is not None:
                out["context"] = self.context
        if self.old is not None and self.status != SAME:
            out["old"] = self.old.to_json()
        if self.new is not None and self.status != SAME:
            out["new"] = self.new.to_json()
        return out


def _span(times: tuple[int, ...] | None) -> str:
    if not times:
        return "untimed"
    return f"{times[-1] - times[0]} ms over {len(times)} chunks"


def _facet_text(facts: CallFacts, facet: str) -> str:
    if facet == "kind":
        return facts.kind
    if facet == "text":
        return repr(_cap(_squeeze(facts.text), 60))
    if facet == "reasoning":
        return repr(_cap(_squeeze(facts.reasoning), 60))
    if facet == "toolCalls":
        return _cap(", ".join(f"{n}({a})" for n, a in facts.tool_calls) or "none", 60)
    if facet == "error":
        return "none" if facts.error is None else f"{facts.error[1]}: {facts.error[0]}"
    if facet == "finish":
        return str(facts.finish)
    if facet == "usage":
        return "none" if facts.usage is None else \
            ", ".join(f"{k}={v}" for k, v in facts.usage)
    return ""


def compare_calls(index: int, old: ScriptEntry, new: ScriptEntry, old_context: Context,
                  new_context: Context) -> CallDiff:
    """Compare one call of two scripts (contexts: the recorded request before each, None when
    the call has none, e.g. a sidecar entry, which then is not compared)."""
    a, b = call_facts(old), call_facts(new)
    changes = [facet for facet, x, y in (
        ("kind", a.kind, b.kind), ("text", a.text, b.text),
        ("reasoning", a.reasoning, b.reasoning), ("toolCalls", a.tool_calls, b.tool_calls),
        ("error", a.error, b.error), ("finish", a.finish, b.finish),
        ("usage", a.usage, b.usage)) if x != y]
    context = None
    if old_context is not None and new_context is not None:
        found = divergence(new_context, old_context)
        if found is not None:
            changes.append("context")
            context = (f"{found.where}: old {_said(found.recorded)}, "
                       f"new {_said(found.live)}")
    if not changes and a.chunks != b.chunks:
        changes.append("stream")
    if a.times is not None and b.times is not None and _gaps(a.times) != _gaps(b.times):
        changes.append("timing")
    return CallDiff(index, CHANGED if changes else SAME, a, b, tuple(changes), context)


def _said(item: ContextItem | None) -> str:
    return "none" if item is None else repr(_cap(_squeeze(item.text), 60))


def _gaps(times: tuple[int, ...]) -> tuple[int, ...]:
    """The gaps between chunks (when a call was recorded is not a change, how it streamed is)."""
    return tuple(y - x for x, y in zip(times, times[1:], strict=False))


@dataclass(slots=True)
class ScriptDiff:
    """The calls of one script pair (either side may be missing: a session added or gone)."""

    index: int
    old: SessionScript | None
    new: SessionScript | None
    calls: list[CallDiff] = field(default_factory=list)

    @property
    def first_changed(self) -> int | None:
        """The first call that is not the same (None: every call is)."""
        return next((c.index for c in self.calls if c.status != SAME), None)

    def label(self) -> str:
        """Which logs the pair is: ``session.jsonl`` or ``session.jsonl → session.v4.jsonl``."""
        names = [_name(s) for s in (self.old, self.new)]
        return names[0] if names[0] == names[1] else f"{names[0]} → {names[1]}"

    def to_json(self) -> dict[str, Any]:
        """The script as ``--json`` prints it."""
        return {"index": self.index, "firstChanged": self.first_changed,
                "old": None if self.old is None else _name(self.old),
                "new": None if self.new is None else _name(self.new),
                "calls": [c.to_json() for c in self.calls]}


def _name(script: SessionScript | None) -> str:
    if script is None:
        return "(none)"
    if script.file is None:
        return "replay.override.json"
    return script.file.replace("\\", "/").rsplit("/", 1)[-1]


def _contexts(script: SessionScript | None) -> list[Context]:
    if script is None:
        return []
    try:
        return script_contexts(script)
    except OSError:
        return [None] * (len(script.entries) + 1)


def diff_scripts(index: int, old: SessionScript | None, new: SessionScript | None) -> ScriptDiff:
    """Compare two scripts call by call."""
    out = ScriptDiff(index, old, new)
    a = old.entries if old is not None else []
    b = new.entries if new is not None else []
    ca, cb = _contexts(old), _contexts(new)
    for k in range(max(len(a), len(b))):
        if k >= len(b):
            out.calls.append(CallDiff(k, REMOVED, call_facts(a[k]), None))
        elif k >= len(a):
            out.calls.append(CallDiff(k, ADDED, None, call_facts(b[k])))
        else:
            out.calls.append(compare_calls(k, a[k], b[k], _at(ca, k), _at(cb, k)))
    return out


def _at(contexts: list[Context], k: int) -> Context:
    return contexts[k] if k < len(contexts) else None


@dataclass(slots=True)
class ScenarioDiff:
    """Two scenarios compared script by script."""

    scripts: list[ScriptDiff]

    @property
    def same(self) -> bool:
        """Every call of every script is the same."""
        return all(s.first_changed is None for s in self.scripts)

    def to_json(self) -> dict[str, Any]:
        """``{"same": bool, "scripts": [...]}``."""
        return {"same": self.same, "scripts": [s.to_json() for s in self.scripts]}

    def counts(self) -> dict[str, int]:
        """How many calls have each status, and how many changes are usage- or timing-only."""
        out = {SAME: 0, CHANGED: 0, ADDED: 0, REMOVED: 0, "usageOnly": 0, "timingOnly": 0}
        for script in self.scripts:
            for call in script.calls:
                out[call.status] += 1
                out["usageOnly"] += call.usage_only
                out["timingOnly"] += call.timing_only
        return out

    def lines(self) -> list[str]:
        """The review as text: one block per script, one line per call (plus one per facet)."""
        lines: list[str] = []
        for script in self.scripts:
            first = script.first_changed
            lines.append(f"script {script.index} ({script.label()}): {len(script.calls)} call(s), "
                         + ("all same" if first is None else f"first changed #{first}"))
            for call in script.calls:
                lines.extend(_call_lines(call))
        c = self.counts()
        differ = c[CHANGED] + c[ADDED] + c[REMOVED]
        lines.append("same: every call is the same" if differ == 0 else
                     f"{differ} call(s) differ: {c[CHANGED]} changed ({c['usageOnly']} "
                     f"usage-only, {c['timingOnly']} timing-only), {c[ADDED]} added, "
                     f"{c[REMOVED]} removed; {c[SAME]} same")
        return lines


def _call_lines(call: CallDiff) -> list[str]:
    if call.status == SAME:
        return [f"  #{call.index} same"]
    if call.status == ADDED:
        assert call.new is not None
        return [f"  #{call.index} added: {call.new.summary()}"]
    if call.status == REMOVED:
        assert call.old is not None
        return [f"  #{call.index} removed: {call.old.summary()}"]
    mark = " (usage-only)" if call.usage_only else " (timing-only)" if call.timing_only else ""
    return [f"  #{call.index} changed{mark}: {', '.join(call.changes)}",
            *(f"      {line}" for line in call.details())]


def diff_scenarios(old: Scenario, new: Scenario) -> ScenarioDiff:
    """Compare two loaded scenarios, scripts matched in bind order."""
    count = max(len(old.scripts), len(new.scripts))
    return ScenarioDiff([
        diff_scripts(i, old.scripts[i] if i < len(old.scripts) else None,
                     new.scripts[i] if i < len(new.scripts) else None)
        for i in range(count)])
