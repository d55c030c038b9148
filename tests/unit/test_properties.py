"""Property tests: packing rows, re-serialising logs and the two derivation paths never disagree."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay_engine import DerivationError, derive_replay_script, parse_session_header, parse_session_log
from replay_engine.scenario.derive_fast import LoadedLog, derive_log_bytes
from tests.unit.logtools import entries_json

SETTINGS = settings(max_examples=40, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])
DELTAS = {"text-delta": "text-chunks", "reasoning-delta": "reasoning-chunks",
          "tool-call-delta": "tool-call-chunks"}
NOISE = [{"type": "tool/result", "data": {"callId": "c", "content": []}}, {"type": "turn/end"}, 7, "s",
         [1, {"a": None}], {"type": "assistant/chunk-like", "data": {}}]


@st.composite
def sessions(draw: st.DrawFn) -> tuple[dict[str, Any], list[Any]]:
    """A header and events: several calls (retries share keys), noise between them."""
    events: list[Any] = []
    clock = draw(st.integers(0, 10**6))
    text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6)

    def add(item: Any) -> None:
        nonlocal clock
        clock += draw(st.integers(-5, 40))
        if isinstance(item, dict) and item.get("type") == "assistant/chunk":
            item = {"type": "assistant/chunk", "seq": len(events), "time": clock, **item}
        events.append(item)

    for call in range(draw(st.integers(0, 4))):
        turn = draw(st.sampled_from([1, 2, 1.0, "1"]))
        step = draw(st.sampled_from([1, 2]))

        def chunk(body: dict[str, Any], turn: Any = turn, step: Any = step) -> dict[str, Any]:
            return {"type": "assistant/chunk", "data": {"turn": turn, "step": step, "chunk": body}}

        for index, kind in enumerate(draw(st.lists(st.sampled_from(["text", "reasoning", "tool"]),
                                                   max_size=3))):
            add(chunk({"type": "block-start", "index": index, "blockType": kind}))
            for piece in draw(st.lists(text, max_size=5)):
                if kind == "tool":
                    body: dict[str, Any] = {"type": "tool-call-delta", "index": index, "id": f"c{call}"}
                    if draw(st.booleans()):
                        body["name"] = draw(st.sampled_from(["grep", "ls"]))
                    body["argumentsDelta"] = piece
                else:
                    body = {"type": f"{kind}-delta", "index": index, "text": piece}
                add(chunk(body))
                if draw(st.integers(0, 9)) == 0:
                    add(draw(st.sampled_from(NOISE)))
            add(chunk({"type": "block-end", "index": index, "block": {"type": kind}}))
        if draw(st.booleans()):
            add(chunk({"type": "usage", "usage": {"inputTokens": draw(st.integers(0, 9))}}))
        if draw(st.integers(0, 7)) == 0:
            add({"type": "compaction/summary",
                 "data": {"llmStreamCall": True, "rawOutput": [{"type": "text", "text": "s"}]}})
        elif call < 3 or draw(st.integers(0, 5)):  # now and then the last call never finishes
            add(chunk({"type": "finish", "reason": {"kind": draw(st.sampled_from(["stop", "error"]))}}))
        add(draw(st.sampled_from(NOISE)))
    seed = draw(st.integers(-len(events) - 2, len(events) + 2))
    return {"type": "session", "id": "p", "createdAt": 1, "seedLength": seed}, events


def _packable(event: Any) -> tuple[Any, ...] | None:
    """The run identity of a delta event a packed row can hold, else None."""
    if not isinstance(event, dict) or event.get("type") != "assistant/chunk":
        return None
    data = event["data"]
    body = data["chunk"]
    if body.get("type") not in DELTAS:
        return None
    if any(isinstance(data[k], bool) or not isinstance(data[k], int | float) for k in ("turn", "step")):
        return None
    turn, step = json.dumps(data["turn"]), json.dumps(data["step"])
    return (body["type"], turn, step, body["index"], body.get("id"), "name" in body, body.get("name"))


def _row(run: list[dict[str, Any]]) -> dict[str, Any]:
    first = run[0]
    body = first["data"]["chunk"]
    data: dict[str, Any] = {"turn": first["data"]["turn"], "step": first["data"]["step"],
                            "index": body["index"]}
    if body["type"] == "tool-call-delta":
        data["id"] = body["id"]
        if "name" in body:
            data["name"] = body["name"]
    data["dt"] = [b["time"] - a["time"] for a, b in zip(run, run[1:], strict=False)]
    key = "args" if body["type"] == "tool-call-delta" else "texts"
    data[key] = [e["data"]["chunk"]["argumentsDelta" if key == "args" else "text"] for e in run]
    return {"type": DELTAS[body["type"]], "seq0": first["seq"], "time0": first["time"], "data": data}


def pack(events: list[Any], cuts: st.DataObject) -> list[Any]:
    """Replace chosen runs of consecutive delta events of one block by packed rows."""
    out: list[Any] = []
    i = 0
    while i < len(events):
        ident = _packable(events[i])
        j = i + 1
        while ident is not None and j < len(events) and _packable(events[j]) == ident:
            j += 1
        if ident is None:
            out.append(events[i])
            i += 1
            continue
        run = events[i:j]
        while run:
            size = cuts.draw(st.integers(1, len(run)))
            segment, run = run[:size], run[size:]
            out.extend([_row(segment)] if cuts.draw(st.booleans()) else segment)
        i = j
    return out


def _reorder(value: Any, how: str) -> Any:
    if isinstance(value, dict):
        items = [(k, _reorder(v, how)) for k, v in value.items()]
        if how == "reversed":
            items.reverse()
        elif how == "sorted":
            items.sort()
        return dict(items)
    if isinstance(value, list):
        return [_reorder(v, how) for v in value]
    return value


def serialise(head: dict[str, Any], events: list[Any], style: st.DataObject) -> str:
    """Write a log with varied separators, key order, escapes, blank lines and line endings."""
    ending = style.draw(st.sampled_from(["\n", "\r\n"]))
    blanks = st.sampled_from(["", " ", "\t", "\u00a0", "\ufeff", " \u00a0 ", "\u3000"])
    lines: list[str] = []
    bom = style.draw(st.sampled_from(["", "\ufeff"]))
    for n, value in enumerate([head, *events]):
        for _ in range(style.draw(st.integers(0, 2)) if style.draw(st.integers(0, 4)) == 0 else 0):
            lines.append(style.draw(blanks))
        how = style.draw(st.sampled_from(["keep", "reversed", "sorted"]))
        spaced = style.draw(st.booleans())
        text = json.dumps(_reorder(value, how), ensure_ascii=style.draw(st.booleans()),
                          separators=(", ", ": ") if spaced else (",", ":"))
        pad = style.draw(st.sampled_from(["", " ", "\t", "\u00a0", "\ufeff"]))
        lines.append((bom if n == 0 else "") + pad + text + pad)
    return ending.join(lines) + style.draw(st.sampled_from(["", ending, ending + " " + ending]))


def plain(head: dict[str, Any], events: list[Any]) -> str:
    return "\n".join(json.dumps(v) for v in [head, *events]) + "\n"


Outcome = tuple[str, Any]


def fast(text: str, seeded: bool) -> Outcome:
    try:
        loaded: LoadedLog = derive_log_bytes(text.encode("utf-8"), seed_length=seeded)
    except DerivationError as exc:
        return ("error", exc.call_key)
    return ("ok", _shape(loaded.entries))


def reference(text: str, seeded: bool) -> Outcome:
    events = parse_session_log(text)
    if seeded:
        events = events[int(parse_session_header(text).seedLength):]
    try:
        return ("ok", _shape(derive_replay_script(events)))
    except DerivationError as exc:
        return ("error", exc.call_key)


def _shape(entries: list[Any]) -> list[Any]:
    return [(e.call_key, list(e.times or []), j) for e, j in zip(entries, entries_json(entries), strict=True)]


@SETTINGS
@given(sessions(), st.booleans())
def test_both_derivation_paths_agree(session: tuple[dict[str, Any], list[Any]], seeded: bool) -> None:
    text = plain(*session)
    assert fast(text, seeded) == reference(text, seeded)


@SETTINGS
@given(sessions(), st.data(), st.booleans())
def test_packing_rows_never_changes_scripts(session: tuple[dict[str, Any], list[Any]], cuts: st.DataObject,
                                             seeded: bool) -> None:
    head, events = session
    expected = fast(plain(head, events), seeded)
    packed = pack(events, cuts)
    text = plain(head, packed)
    assert parse_session_log(text) == parse_session_log(plain(head, events))
    assert fast(text, seeded) == expected
    assert reference(text, seeded) == expected


@SETTINGS
@given(sessions(), st.data(), st.booleans())
def test_reserialising_never_changes_scripts(session: tuple[dict[str, Any], list[Any]], style: st.DataObject,
                                             seeded: bool) -> None:
    head, events = session
    expected = fast(plain(head, events), seeded)
    text = serialise(head, pack(events, style), style)
    assert fast(text, seeded) == expected
    assert reference(text, seeded) == expected


@pytest.mark.parametrize("pad", ["\u00a0", "\ufeff", "\u3000 "])
def test_event_line_padded_with_unicode_whitespace(pad: str) -> None:
    finish = '{"type":"assistant/chunk","data":{"turn":1,"step":1,"chunk":{"type":"finish"}}}'
    text = f'{{"type":"session"}}\n{pad}{{"type":"note"}}{pad}\n{pad}{finish}\n'
    assert parse_session_log(text)[0] == {"type": "note", "seq": 0, "time": 0}
    loaded = derive_log_bytes(text.encode())
    assert loaded.event_count == 2
    assert [e.call_key for e in loaded.entries] == ["1/1"]
