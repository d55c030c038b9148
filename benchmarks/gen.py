"""Generate realistic session logs for the benchmarks (deterministic for a given seed).

A log looks like a long recorded agent session: a header, then turns of steps,
each with a model call streamed as chunk events (some runs packed into
``*-chunks`` rows with per-member time gaps), the assistant message, tool calls
with large results, and the bookkeeping events derivation ignores.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

WORDS = (
    "the", " file", " path", " needs", " a", " test", " for", " each", " branch", " and",
    " we", " should", " check", " whether", " it", " returns", " None", " when", " input",
    " is", " empty", ".", ",", "\n", " `", "load", "_scenario", "`", " 包", "的文件", "结构",
    " \"quoted\"", " back\\slash", " tab\t", " — ", " é", " 🙂", " 0", " 42", " {", "}",
    " def", " class", " return", " import", " self", ":", " ->", " list", "[", "]",
)
VERSION = 2
"""Bumped whenever the generated logs change, so stale files in benchmarks/_data are not reused."""
TOOLS = ("bash", "read_file", "write_file", "grep", "get_goal", "apply_patch")


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class _Writer:
    """Writes events with increasing seq/time and counts what it wrote."""

    def __init__(self, out: Callable[[str], Any], rng: random.Random) -> None:
        self.out = out
        self.rng = rng
        self.vocabulary = _Vocabulary(rng)
        self.seq = 0
        self.time = 1_786_073_817_152
        self.size = 0
        self.lines = 0
        self.events = 0
        self.chunk_events = 0
        self.calls = 0

    def line(self, text: str) -> None:
        self.out(text)
        self.out("\n")
        self.size += len(text.encode("utf-8")) + 1
        self.lines += 1

    def event(self, kind: str, data: Any, **extra: Any) -> None:
        self.time += self.rng.randint(0, 40)
        self.line(_dumps({"type": kind, "seq": self.seq, "time": self.time, "data": data, **extra}))
        self.seq += 1
        self.events += 1

    def chunk(self, turn: int, step: int, chunk: dict[str, Any]) -> None:
        self.event("assistant/chunk", {"turn": turn, "step": step, "chunk": chunk})
        self.chunk_events += 1

    def packed(self, kind: str, data: dict[str, Any], members: int) -> None:
        dt = [self.rng.choice((0, 0, 0, 1, 1, 19, 22, 27, 40, 97)) for _ in range(members - 1)]
        if members > 3 and self.rng.random() < 0.05:
            dt[self.rng.randrange(len(dt))] = -3  # recorders do write small negative gaps
        data = {**data, "dt": dt}
        self.line(_dumps({"type": kind, "seq0": self.seq, "time0": self.time, "data": data}))
        self.seq += members
        self.time += sum(dt)
        self.events += members
        self.chunk_events += members


class _Vocabulary:
    """Stream deltas drawn from a Zipf-like vocabulary (as model tokens are), some joined."""

    def __init__(self, rng: random.Random, size: int = 20_000) -> None:
        syllables = ["ba", "ko", "ri", "ent", "ion", "st", "ar", "te", "qu", "ly", "ment", "ch"]
        made = {
            rng.choice((" ", "", "_")) + "".join(rng.choice(syllables) for _ in range(rng.randint(1, 3)))
            for _ in range(size * 2)
        }
        self.tokens = list(WORDS) + sorted(made)[: size - len(WORDS)]
        rng.shuffle(self.tokens)
        weights = [1 / (rank + 1) for rank in range(len(self.tokens))]
        total = 0.0
        self.cumulative: list[float] = []
        for weight in weights:
            total += weight
            self.cumulative.append(total)

    def deltas(self, rng: random.Random, n: int) -> list[str]:
        picks = rng.choices(self.tokens, cum_weights=self.cumulative, k=n * 5 // 4)
        out: list[str] = []
        i = 0
        while i < len(picks):
            take = 1 if rng.random() < 0.8 else rng.randint(2, 3)
            out.append("".join(picks[i : i + take]))
            i += take
        return out


def _blob(rng: random.Random, size: int) -> str:
    words: list[str] = []
    total = 0
    while total < size:
        w = rng.choice(WORDS)
        words.append(w)
        total += len(w)
    return "".join(words)


def _stream_deltas(
    w: _Writer, turn: int, step: int, index: int, kind: str, deltas: list[str], extra: dict[str, Any]
) -> None:
    """Write a block's deltas: packed rows (runs of up to 400) or one event per delta."""
    packed = w.rng.random() < 0.9
    if not packed:
        for d in deltas:
            if kind == "tool-call":
                w.chunk(turn, step, {"type": "tool-call-delta", "index": index, **extra, "argumentsDelta": d})
            else:
                w.chunk(turn, step, {"type": f"{kind}-delta", "index": index, "text": d})
        return
    pos = 0
    while pos < len(deltas):
        run = deltas[pos : pos + w.rng.randint(50, 400)]
        pos += len(run)
        base = {"turn": turn, "step": step, "index": index}
        if kind == "tool-call":
            w.packed("tool-call-chunks", {**base, **extra, "args": run}, len(run))
        else:
            w.packed(f"{kind}-chunks", {**base, "texts": run}, len(run))


def _model_call(w: _Writer, turn: int, step: int, retry_error: bool) -> list[tuple[str, str, str]]:
    """One streamed model call; returns the tool calls it made (id, name, arguments)."""
    rng = w.rng
    index = 0
    content: list[dict[str, Any]] = []
    calls: list[tuple[str, str, str]] = []
    if rng.random() < 0.8:
        deltas = w.vocabulary.deltas(rng, rng.randint(20, 300))
        w.chunk(turn, step, {"type": "block-start", "index": index, "blockType": "reasoning"})
        _stream_deltas(w, turn, step, index, "reasoning", deltas, {})
        block = {"type": "reasoning", "text": "".join(deltas)}
        w.chunk(turn, step, {"type": "block-end", "index": index, "block": block})
        content.append(block)
        index += 1
    if rng.random() < 0.6 or index == 0:
        deltas = w.vocabulary.deltas(rng, rng.randint(10, 250))
        w.chunk(turn, step, {"type": "block-start", "index": index, "blockType": "text"})
        _stream_deltas(w, turn, step, index, "text", deltas, {})
        block = {"type": "text", "text": "".join(deltas)}
        w.chunk(turn, step, {"type": "block-end", "index": index, "block": block})
        content.append(block)
        index += 1
    for _ in range(rng.choice((0, 1, 1, 1, 2, 3))):
        ident = f"call_{w.calls:05d}_{rng.getrandbits(64):016x}"
        name = rng.choice(TOOLS)
        args = _dumps({"command": _blob(rng, rng.randint(10, 300)), "description": "run it"})
        pieces = [args[i : i + 10] for i in range(0, len(args), 10)]
        w.chunk(turn, step, {"type": "block-start", "index": index, "blockType": "tool-call"})
        _stream_deltas(w, turn, step, index, "tool-call", pieces, {"id": ident, "name": name})
        block = {"type": "tool-call", "id": ident, "name": name, "arguments": args}
        w.chunk(turn, step, {"type": "block-end", "index": index, "block": block})
        content.append(block)
        calls.append((ident, name, args))
        index += 1
        w.calls += 1
    usage = {"inputTokens": rng.randint(1000, 90000), "outputTokens": rng.randint(10, 4000),
             "cacheReadTokens": rng.randint(0, 50000), "reasoningTokens": rng.randint(0, 3000)}
    w.chunk(turn, step, {"type": "usage", "usage": usage})
    if retry_error:
        reason: dict[str, Any] = {"kind": "error", "code": "EMPTY_RESPONSE", "message": "empty"}
    else:
        reason = {"kind": "tool-calls" if calls else "stop"}
    w.chunk(turn, step, {"type": "finish", "reason": reason, "replayState": {"turn": turn}})
    w.event("assistant/message", {"turn": turn, "step": step,
                                  "message": {"role": "assistant", "content": content}})
    return calls


def _step(w: _Writer, turn: int, step: int) -> bool:
    """One agent step; returns whether the turn goes on."""
    rng = w.rng
    w.event("step/start", {"turn": turn, "step": step})
    if step == 1 or rng.random() < 0.5:
        w.event("request/header", {"header": {"config": {"provider": "p", "model": "m",
                "maxTokens": 256000}, "system": _blob(rng, 1500), "tools": "{{tools}}"}, "reason": "initial"})
        w.event("request/context", {"provider": "p", "model": "m", "contextWindow": 1000000})
    if rng.random() < 0.5:
        w.event("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [
            {"content": [{"type": "text", "text": _blob(rng, rng.randint(100, 2000))}], "role": "user"}]})
    if rng.random() < 0.03:
        _model_call(w, turn, step, retry_error=True)  # a retry shares the key
    calls = _model_call(w, turn, step, retry_error=False)
    for ident, name, args in calls:
        w.event("tool/call", {"turn": turn, "step": step, "callId": ident, "name": name, "arguments": args})
        result = _blob(rng, rng.choice((200, 800, 3000, 12000, 40000)))
        w.event("tool/result", {"turn": turn, "step": step, "message": {
            "source": {"kind": "tool", "callId": ident}, "role": "user",
            "content": [{"type": "tool-result", "toolCallId": ident,
                         "content": [{"type": "text", "text": result}], "isError": False}]}},
            sourceEventSeqs=[w.seq - 1], surfaceOp="append")
    w.event("step/end", {"turn": turn, "step": step})
    return bool(calls) and step < 12


def _compaction(w: _Writer) -> None:
    raw = [{"type": "text", "text": _blob(w.rng, 2000)}]
    w.event("compaction/summary", {"llmStreamCall": True, "rawOutput": raw,
                                   "usage": {"inputTokens": 50000, "outputTokens": 900}})


def write_log(path: Path, target_bytes: int, seed: int = 1) -> dict[str, int]:
    """Write a log of about ``target_bytes`` to ``path`` atomically; returns its counts."""
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as handle:
        w = _Writer(handle.write, rng)
        w.line(_dumps({"type": "session", "version": 0, "id": f"bench-{seed}",
                       "createdAt": 1_786_073_817_152, "cwd": "/work", "seedLength": 0}))
        turn = 0
        while w.size < target_bytes:
            turn += 1
            w.event("turn/start", {"turn": turn})
            text = _blob(rng, rng.randint(200, 6000))
            message = {"content": [{"type": "text", "text": text}], "role": "user", "id": f"u-{turn}"}
            w.event("user/message", message)
            step = 1
            while _step(w, turn, step):
                step += 1
            if rng.random() < 0.02:
                _compaction(w)
            w.event("turn/end", {"turn": turn, "reason": "stop"})
    tmp.replace(path)
    return {"bytes": w.size, "lines": w.lines, "events": w.events, "chunk_events": w.chunk_events}


def ensure_log(path: Path, target_bytes: int, seed: int = 1) -> Path:
    """Generate the log unless a file of about the right size already exists there."""
    if not path.is_file() or abs(path.stat().st_size - target_bytes) > target_bytes // 10:
        write_log(path, target_bytes, seed)
    return path


def write_corpus_log(path: Path, target_bytes: int, corpus: Path) -> dict[str, int]:
    """A log made of the conformance corpus's own recorded events, replicated to ``target_bytes``.

    This is the shape real logs have: mostly single ``assistant/chunk`` lines and large
    non-chunk events, few packed rows. Only logs that load (every call finished) are used, one
    header on top, each copy's lines as recorded (projected or not).
    """
    expected = corpus / "expected"
    bodies: list[bytes] = []
    for log in sorted((corpus / "scenarios").glob("*/session*.jsonl")):
        result = json.loads((expected / f"{log.parent.name}.json").read_text(encoding="utf-8"))
        if not result.get("ok"):
            continue
        lines = [line for line in log.read_bytes().splitlines(keepends=True) if line.strip()]
        body = b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines[1:])
        bodies.append(body)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    size = lines_out = 0
    with open(tmp, "wb") as handle:
        head = _dumps({"type": "session", "id": "corpus", "createdAt": 1_786_073_817_152}) + "\n"
        handle.write(head.encode())
        size += len(head)
        while size < target_bytes:
            for body in bodies:
                handle.write(body)
                size += len(body)
                lines_out += body.count(b"\n")
                if size >= target_bytes:
                    break
    tmp.replace(path)
    return {"bytes": size, "lines": lines_out + 1}


def ensure_corpus_log(path: Path, target_bytes: int, corpus: Path) -> Path:
    """Build the replicated-corpus log unless one of about the right size is already there."""
    if not path.is_file() or abs(path.stat().st_size - target_bytes) > target_bytes // 10:
        write_corpus_log(path, target_bytes, corpus)
    return path


_ENVELOPE = b'"seq":'
_END_SEED = b'"session/end-seed"'


def write_generation_log(path: Path, target_bytes: int, corpus: Path, generation: int = 4) -> dict[str, int]:
    """A ``session.vK.jsonl`` made of the generations corpus's own logs of generation K (every
    one that loads), replicated to ``target_bytes`` under one header.

    A v2+ log is complete (every event has seq and time) or projected (none has), never both,
    so events recorded without them get a running ``seq`` and their log's last time written
    in, each line otherwise kept byte for byte; inherited end-seed markers are left out (the
    one header is not seeded).
    """
    expected = corpus / "expected"
    bodies: list[list[bytes]] = []
    for log in sorted((corpus / "scenarios").glob(f"*/session*.v{generation}.jsonl")):
        result = json.loads((expected / f"{log.parent.name}.json").read_text(encoding="utf-8"))
        if not result.get("ok"):
            continue
        lines = [line.rstrip(b"\r\n") for line in log.read_bytes().splitlines() if line.strip()]
        bodies.append([line for line in lines[1:] if _END_SEED not in line])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    size = lines_out = seq = 0
    time = 1_786_073_817_152
    with open(tmp, "wb") as handle:
        head = _dumps({"type": "session", "version": generation, "id": "corpus",
                       "createdAt": time, "isSeeded": False, "delegationDepth": 0}) + "\n"
        handle.write(head.encode())
        size += len(head)
        while size < target_bytes:
            for body in bodies:
                out = []
                for line in body:
                    if _ENVELOPE not in line[:200]:
                        line = b'{"seq":%d,"time":%d,' % (seq, time) + line[1:]
                    out.append(line + b"\n")
                    seq += 1
                    time += 7
                chunk = b"".join(out)
                handle.write(chunk)
                size += len(chunk)
                lines_out += len(out)
                if size >= target_bytes:
                    break
    tmp.replace(path)
    return {"bytes": size, "lines": lines_out + 1}


def ensure_generation_log(path: Path, target_bytes: int, corpus: Path, generation: int = 4) -> Path:
    """Build the replicated generation-K log unless one of about the right size is there."""
    if not path.is_file() or abs(path.stat().st_size - target_bytes) > target_bytes // 10:
        write_generation_log(path, target_bytes, corpus, generation)
    return path


def write_packed_v4(source: Path, path: Path) -> dict[str, int]:
    """The same session as the v0 log ``source`` (from ``write_log``), written as generation 4:
    each model call's chunk lines and packed rows become the stream records of one settlement
    event (docs/format.md#settlement-streams), which takes the place of the call's
    ``assistant/message`` line (an error-finished call settles as ``assistant/attempt``); every other line is
    kept as is."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    size = lines = 0
    stream: list[dict[str, Any]] = []
    with open(source, "rb") as lines_in, open(tmp, "w", encoding="utf-8", newline="\n") as out:
        for raw in lines_in:
            event = json.loads(raw)
            kind = event["type"]
            if kind == "session":
                text = _dumps({**event, "version": 4, "isSeeded": False, "delegationDepth": 0})
            elif kind == "assistant/chunk":
                stream.append({"type": "chunk", "time": event["time"], "chunk": event["data"]["chunk"]})
                continue
            elif kind.endswith("-chunks"):
                data = dict(event["data"])
                del data["turn"], data["step"]
                stream.append({"type": kind, "time0": event["time0"], **data})
                continue
            elif kind == "assistant/message":
                finish = stream[-1]["chunk"]["reason"]["kind"]
                event["type"] = "assistant/attempt" if finish == "error" else kind
                event["data"] = {**event["data"], "stream": stream}
                stream = []
                text = _dumps(event)
            else:
                text = raw.decode("utf-8").rstrip("\n")
            out.write(text + "\n")
            size += len(text.encode("utf-8")) + 1
            lines += 1
    tmp.replace(path)
    return {"bytes": size, "lines": lines}


def ensure_packed_v4(source: Path, path: Path) -> Path:
    """Render ``source`` as generation 4 unless that file is already there and newer."""
    if not path.is_file() or path.stat().st_mtime < source.stat().st_mtime:
        write_packed_v4(source, path)
    return path
