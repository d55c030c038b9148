"""The streaming loader derives exactly what ``derive_replay_script(parse_session_log(...))`` does.

``load_log`` / ``derive_log_bytes`` take shortcuts (typed decoding, whole packed rows at a
time); every case here runs both paths on the same bytes and compares calls, chunks and
recorded times, or the error (parse errors word for word, naming the same line).
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from replay_engine import (
    DerivationError,
    LogParseError,
    ReplayError,
    derive_replay_script,
    load_log,
    parse_session_header,
    parse_session_log,
)
from replay_engine.scenario.derive_fast import derive_log_bytes

FILE = "f.jsonl"


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def head(seed: Any = None) -> str:
    out: dict[str, Any] = {"type": "session", "id": "s", "createdAt": 5}
    if seed is not None:
        out["seedLength"] = seed
    return dumps(out)


def ev(turn: Any, step: Any, chunk: Any, time: Any = 100) -> str:
    return dumps({"type": "assistant/chunk", "seq": 0, "time": time,
                  "data": {"turn": turn, "step": step, "chunk": chunk}})


def start(turn: Any = 1, step: Any = 1, index: int = 0) -> str:
    return ev(turn, step, {"type": "block-start", "index": index, "blockType": "text"})


def finish(turn: Any = 1, step: Any = 1, time: Any = 900) -> str:
    return ev(turn, step, {"type": "finish", "reason": {"kind": "stop"}}, time)


def texts_row(kind: str = "text-chunks", turn: Any = 1, step: Any = 1, texts: Any = ("a", "b", "c"),
              dt: Any = (5, -2), time0: Any = 200, seq0: Any = 3, **extra: Any) -> str:
    data = {"turn": turn, "step": step, "index": 0, "dt": list(dt), "texts": list(texts), **extra}
    return dumps({"type": kind, "seq0": seq0, "time0": time0, "data": data})


def tool_row(name: Any = "bash", args: Any = ("{", '"x"', "}"), dt: Any = (1, 1), **extra: Any) -> str:
    data: dict[str, Any] = {"turn": 1, "step": 1, "index": 1, "id": "c1"}
    if name is not None:
        data["name"] = name
    data.update(dt=list(dt), args=list(args), **extra)
    return dumps({"type": "tool-call-chunks", "seq0": 0, "time0": 50, "data": data})


def shape(entries: list[Any]) -> list[tuple[Any, ...]]:
    return [(e.call_key, e.entry.chunks, list(e.times or ())) for e in entries]


def outcome(run: Any) -> tuple[Any, ...]:
    """("ok", calls) or the error: parse errors by message, derivation errors by code and key."""
    try:
        return ("ok", shape(run()))
    except LogParseError as exc:
        return ("parse", exc.message, exc.line)
    except DerivationError as exc:
        return ("derive", exc.code, exc.call_key)


def reference(data: bytes, seeded: bool) -> tuple[Any, ...]:
    def run() -> list[Any]:
        events = parse_session_log(data, FILE)
        if seeded:
            seed = parse_session_header(data, FILE).seedLength
            events = events[int(seed) if math.isfinite(seed) else 0 :]
        return derive_replay_script(events, FILE)

    return outcome(run)


def fast(data: bytes, seeded: bool, tmp_path: Path) -> tuple[Any, ...]:
    in_memory = outcome(lambda: derive_log_bytes(data, FILE, seed_length=seeded).entries)
    path = tmp_path / "session.jsonl"
    path.write_bytes(data)
    from_file = outcome(lambda: load_log(path, seed_length=seeded, name=FILE).entries)
    assert from_file == in_memory
    return from_file


def check(lines: list[str] | bytes, tmp_path: Path, *, seeded: bool = False, newline: str = "\n") -> Any:
    data = lines if isinstance(lines, bytes) else (newline.join(lines) + newline).encode("utf-8")
    got = fast(data, seeded, tmp_path)
    assert got == reference(data, seeded)
    return got


OK_CASES: dict[str, list[str]] = {
    "plain": [head(), start(), ev(1, 1, {"type": "text-delta", "index": 0, "text": "hi"}), finish()],
    "blank lines of every kind": [
        "", "\u00a0", "\ufeff", " \t", "\u3000\u2028", head(), "", start(), "\ufeff\u00a0 ",
        finish(), "\u205f",
    ],
    "BOM or NBSP around a line": ["\ufeff" + head(), "\u00a0" + start() + "\u00a0", finish() + "\ufeff"],
    "non-object lines are ignored": [head(), "5", '"text"', "[1,2]", "true", "{}", start(), "1.5", finish()],
    "event type not a string": [head(), start(), '{"type":["text-chunks"]}', '{"type":{"a":1}}', finish()],
    "unknown events with odd data": [
        head(), '{"type":"tool/result","data":null}', '{"type":"x","data":[1,{"y":2}]}',
        '{"type":"x","data":"s"}', start(), finish(),
    ],
    "packed rows of every kind": [
        head(), start(), texts_row(), texts_row("reasoning-chunks", texts=["r"], dt=[]),
        tool_row(), tool_row(name=None), finish(),
    ],
    "packed key order and duplicate keys": [
        head(), start(),
        '{"data":{"texts":["x","y"],"dt":[1],"index":0,"step":1,"turn":1},"time0":7,"seq0":0,'
        '"type":"text-chunks"}',
        '{"type":"text-chunks","seq0":0,"time0":1,"time0":2,"data":{"turn":1,"step":1,"index":0,'
        '"dt":[3],"texts":["p","q"]}}',
        texts_row()[:-1] + ',"type":"note"}',
        '{"type":"note",' + texts_row()[1:-1] + "}",
        finish(),
    ],
    "integers written as floats": [
        head(), start(1.0, 1), texts_row(turn=1.0, step=1.0, seq0=2.0, time0=10.0, dt=[2.0, 1]),
        ev("1", 1, {"type": "text-delta", "index": 0, "text": "z"}), finish(1, 1.0),
    ],
    "odd turn and step values": [
        head(), start(None, True), finish(None, True), ev([1, None], {"a": 1}, {"type": "finish"}),
        ev(1e21, -0.0, {"type": "finish"}), ev(0.1, "x", {"type": "finish"}),
    ],
    "odd times": [
        head(), ev(1, 1, {"type": "block-start"}, time=None), ev(1, 1, {"type": "usage"}, time="7"),
        ev(1, 1, {"type": "usage"}, time=2.9), ev(1, 1, {"type": "usage"}, time=2**63),
        ev(1, 1, {"type": "usage"}, time=-(2**63)), finish(time=True),
    ],
    "long packed rows": [head(), start(), texts_row(texts=["t"] * 1500, dt=[3] * 1499), finish()],
    "packed times past int64": [
        head(), start(), texts_row(texts=["t"] * 1200, dt=[2**53 - 1] * 1199, time0=2**53 - 1), finish(),
    ],
    "packed times reaching the int64 minimum": [
        head(), start(),
        texts_row(texts=["t"] * 1025, dt=[-(2**53 - 1)] * 1023 + [-1024], time0=-(2**53 - 1)), finish(),
    ],
    "retries share a key, finish splits them": [
        head(), start(), finish(), start(), texts_row(), finish(), start(2, 1), finish(2, 1),
    ],
    "compaction between calls": [
        head(), start(), finish(),
        dumps({"type": "compaction/summary", "time": 7, "data": {
            "llmStreamCall": True, "rawOutput": [{"type": "text", "text": "sum"}, 5], "usage": None}}),
        dumps({"type": "compaction/summary", "data": {"llmStreamCall": False}}), start(2, 1), finish(2, 1),
    ],
    "header only": [head()],
    "empty": [""],
    "header is not an object": ["[1]", start(), finish()],
}


@pytest.mark.parametrize("name", sorted(OK_CASES))
@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_same_calls_as_reference(name: str, newline: str, tmp_path: Path) -> None:
    got = check(OK_CASES[name], tmp_path, newline=newline)
    assert got[0] == "ok"


ERROR_CASES: dict[str, tuple[list[str], tuple[str, Any]]] = {
    # name: (lines, ("parse", line number) or ("derive", call key))
    "malformed line in the middle": (
        [head(), start(), '{"type":"assistant/chunk",', finish()], ("parse", 3)),
    "malformed after a blank line": ([head(), "\u00a0", start(), "", "{nope}", finish()], ("parse", 5)),
    "two values on one line": ([head(), start(), "{} {}", finish()], ("parse", 3)),
    "NaN is not JSON": ([head(), start(), '{"type":"x","time":NaN}', finish()], ("parse", 3)),
    "null event": ([head(), start(), "null", finish()], ("parse", 3)),
    "null header": (["null", start()], ("parse", 1)),
    "packed row with an extra key": ([head(), start(), texts_row(extra=1), finish()], ("parse", 3)),
    "packed row with a short dt": ([head(), start(), texts_row(dt=[1]), finish()], ("parse", 3)),
    "packed row with no texts": ([head(), start(), texts_row(texts=[], dt=[]), finish()], ("parse", 3)),
    "packed row with a boolean turn": ([head(), start(), texts_row(turn=True), finish()], ("parse", 3)),
    "packed row with a fractional gap": ([head(), start(), texts_row(dt=[1.5, 1]), finish()], ("parse", 3)),
    "packed row gap beyond 2^53": ([head(), start(), texts_row(dt=[2**53, 1]), finish()], ("parse", 3)),
    "packed text row with an id": ([head(), start(), texts_row(id="x"), finish()], ("parse", 3)),
    "tool row without id": (
        [head(), start(), tool_row().replace('"id":"c1",', ""), finish()], ("parse", 3)),
    "tool row with a numeric name": ([head(), start(), tool_row(name=5), finish()], ("parse", 3)),
    "negative seq0": ([head(), start(), texts_row(seq0=-1), finish()], ("parse", 3)),
    "chunk event without data": (
        [head(), '{"type":"assistant/chunk","time":1}'], ("derive", "undefined/undefined")),
    "chunk event with null data": (
        [head(), '{"type":"assistant/chunk","data":null}'], ("derive", "undefined/undefined")),
    "chunk event with list data": (
        [head(), '{"type":"assistant/chunk","data":[1]}'], ("derive", "undefined/undefined")),
    "chunk event with null chunk": ([head(), ev(1, 2, None)], ("derive", "1/2")),
    "unfinished call": ([head(), start(), texts_row(), start(1, 2), finish(1, 2)], ("derive", "1/1")),
    "unfinished last call": ([head(), start(), finish(), texts_row(turn=3)], ("derive", "3/1")),
    "compaction without data": ([head(), '{"type":"compaction/summary"}'], ("derive", None)),
}


@pytest.mark.parametrize("name", sorted(ERROR_CASES))
def test_same_error_as_reference(name: str, tmp_path: Path) -> None:
    lines, expected = ERROR_CASES[name]
    got = check(lines, tmp_path)
    assert got[0] == expected[0]
    if got[0] == "parse":
        assert got[2] == expected[1]
        assert got[1].startswith(f"{FILE}:{expected[1]}: ")
    else:
        assert got[2] == expected[1]


def test_invalid_utf8_in_a_chunk_names_the_line(tmp_path: Path) -> None:
    data = (head() + "\n" + start() + "\n").encode() + b'{"type":"assistant/chunk","data":{"chunk":"\xff"}}\n'
    got = check(data, tmp_path)
    assert got[:1] == ("parse",) and got[2] == 3 and "UTF-8" in got[1]


SEED_LOG = [
    head(), "7", start(), texts_row(texts=["a", "b", "c", "d"], dt=[1, 2, 3]), finish(),
    '{"type":"note"}', start(2, 1), ev(2, 1, {"type": "text-delta", "text": "x"}), finish(2, 1),
]


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 2.7, -0.5, -1, -3, -4, -6,
                                  -7, -9, -11, -12, -13, -100, 100, 1e300, "x", None, True])
def test_seed_length_slices_like_the_reference(seed: Any, tmp_path: Path) -> None:
    lines = [head(seed)] + SEED_LOG[1:]
    for newline in ("\n", "\r\n"):
        check(lines, tmp_path, seeded=True, newline=newline)


def test_lines_are_physical_lines(tmp_path: Path) -> None:
    lines = ["", head(), "\u00a0", start(), texts_row(), "", finish(), "5", start(2, 1), finish(2, 1)]
    text = "\r\n".join(lines)
    path = tmp_path / "session.jsonl"
    path.write_bytes(text.encode())
    entries = load_log(path).entries
    assert [(e.call_key, e.lines) for e in entries] == [("1/1", (4, 7)), ("2/1", (9, 10))]
    assert list(entries[0].times or ()) == [100, 200, 205, 203, 900]


def test_unfinished_call_error_names_its_lines(tmp_path: Path) -> None:
    lines = [head(), "", start(), texts_row(), start(1, 2), finish(1, 2)]
    with pytest.raises(DerivationError) as caught:
        derive_log_bytes("\n".join(lines).encode(), FILE)
    assert caught.value.message.startswith(f"{FILE}:3-4: model call 1/1 ")
    assert caught.value.line == 4


def test_many_distinct_member_texts(tmp_path: Path) -> None:
    # Past the shared-text table's size, texts are still kept exactly (only no longer shared).
    rows = [texts_row(texts=[f"t{i}-{k}" for k in range(500)], dt=[1] * 499) for i in range(12)]
    rows.append(texts_row(texts=["t0-1", "t11-499", "new"]))
    got = check([head(), start(), *rows, finish()], tmp_path)
    assert len(got[1][0][1]) == 12 * 500 + 3 + 2


def _random_log(rng: random.Random) -> list[str]:
    """A log mixing every kind of line the fast path treats specially."""
    lines = [head(rng.choice([None, 0, 2, 5, -3, -8, 3.5, -2.5]))]
    for turn in range(1, rng.randint(2, 6)):
        for step in range(1, rng.randint(2, 4)):
            t: Any = rng.choice([turn, float(turn), str(turn)])
            lines.append(start(t, step))
            for _ in range(rng.randint(0, 3)):
                roll = rng.random()
                n = rng.randint(1, 5)
                if roll < 0.3:
                    lines.append(texts_row(rng.choice(["text-chunks", "reasoning-chunks"]), turn, step,
                                           [rng.choice(["a", "é", "包", "\n", '"']) for _ in range(n)],
                                           [rng.randint(-5, 50) for _ in range(n - 1)]))
                elif roll < 0.45:
                    lines.append(tool_row(rng.choice([None, "bash"]), ["{"] * n, [1] * (n - 1)))
                elif roll < 0.7:
                    lines.append(ev(turn, step, {"type": "text-delta", "index": 0, "text": "w"},
                                    rng.choice([1, 2.5, None])))
                else:
                    lines.append(rng.choice([
                        "", "\u00a0", "\ufeff", "5", "[]", '{"type":"tool/result","data":{"x":"y"}}',
                        '{"type":"user/message","data":null}', '"s"',
                    ]))
            lines.append(finish(turn, step) if rng.random() < 0.95 else start(turn, step))
    return lines


@pytest.mark.parametrize("seed", range(40))
def test_random_logs_match_reference(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    lines = _random_log(rng)
    check(lines, tmp_path, seeded=rng.random() < 0.5, newline=rng.choice(["\n", "\r\n"]))


def test_errors_are_replay_errors(tmp_path: Path) -> None:
    for lines, _ in ERROR_CASES.values():
        data = ("\n".join(lines) + "\n").encode()
        with pytest.raises(ReplayError):
            derive_log_bytes(data, FILE)


@pytest.mark.parametrize("payload", [b'{"a":1e999}', b'{"a":"\xff"}', b'{"a":["\xc3"]},"meta":"\xff"'])
def test_ignored_payloads_are_checked_for_syntax_only(payload: bytes) -> None:
    # Documented difference: the generic parser rejects these; derivation never reads them,
    # and the reference (JavaScript) reads both.
    data = head().encode() + b'\n{"type":"tool/result","data":' + payload + b"}\n" + start().encode()
    data += b"\n" + finish().encode() + b"\n"
    with pytest.raises(LogParseError):
        parse_session_log(data, FILE)
    assert [e.call_key for e in derive_log_bytes(data, FILE).entries] == ["1/1"]
    broken = data.replace(b'"data":', b'"data":{', 1)
    with pytest.raises(LogParseError, match=f"^{FILE}:2: "):
        derive_log_bytes(broken, FILE)
