"""Benchmark: the replay server against a trivial asyncio SSE endpoint, in the same run.

Run by hand: ``python3 benchmarks/serve.py [--chunks 100000] [--sessions 50] [--each 2000]``;
``python3 benchmarks/serve.py --reload-mb 15`` instead measures how long a stream in flight
is held while ``POST /replay/v1/reload`` reloads a generated scenario of that many MB.
A child process serves both endpoints on one event loop (uvloop when installed, as
``dsh-replay serve`` does); this process drives them with a raw socket client.

Targets on a 2-core machine: one stream >= 0.75x the trivial endpoint and first
chunk <= 5 ms; 50 concurrent sessions >= 0.75x the floor in total and fair
(every session's first chunk within 50 ms of its request).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import selectors
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from replay_engine import ChunksEntry, ReplayEngine, ScriptEntry, SessionScript  # noqa: E402
from replay_engine.server import ReplayServer, serve_scenario  # noqa: E402
from replay_engine.wire.openai_chat import ChatStreamEncoder  # noqa: E402

YIELD_EVERY = 64
FAIR_MS = 50
"""The latest a session's first chunk may come after its request while 49 others stream."""


def _entry(chunks: int, tag: str) -> ScriptEntry:
    body: list[dict[str, Any]] = [{"type": "block-start", "index": 0, "blockType": "text"}]
    body += [{"type": "text-delta", "index": 0, "text": f"{tag} token {i % 1000} "}
             for i in range(chunks)]
    body += [{"type": "block-end", "index": 0, "block": {"type": "text", "text": "..."}},
             {"type": "usage", "usage": {"inputTokens": 10, "outputTokens": chunks}},
             {"type": "finish", "reason": {"kind": "stop"}}]
    return ScriptEntry(ChunksEntry.model_construct(kind="chunks", chunks=body), "derived")


def _scripts(single: int, sessions: int, each: int) -> list[SessionScript]:
    out = [SessionScript("single", 0, [_entry(single, "single")], True)]
    out += [SessionScript(f"s{i}", i + 1, [_entry(each, f"s{i}")], False) for i in range(sessions)]
    return out


async def _trivial_endpoint(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """The floor: parse nothing but the request line, write one pre-built event per chunk."""
    line = await reader.readline()
    while (await reader.readline()) not in (b"\r\n", b""):
        pass
    path = line.split()[1]
    count = int(path.rsplit(b"/", 1)[-1])
    drain_each = path.startswith(b"/drain/")
    event = ChatStreamEncoder("bench").encode({"type": "text-delta", "index": 0,
                                           "text": "single token 123 "})
    assert event is not None
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n")
    for i in range(count):
        writer.write(event)
        if drain_each:
            await writer.drain()
        if i % YIELD_EVERY == YIELD_EVERY - 1:
            await writer.drain()
            await asyncio.sleep(0)
    writer.write(b"data: [DONE]\n\n")
    await writer.drain()
    writer.close()


async def _serve_child(single: int, sessions: int, each: int, freeze: bool) -> None:
    engine = ReplayEngine(_scripts(single, sessions, each))
    if freeze:
        gc.freeze()  # as ``dsh-replay serve`` does once the scenario is loaded
    trivial = await asyncio.start_server(_trivial_endpoint, "127.0.0.1", 0)
    port = trivial.sockets[0].getsockname()[1]
    async with ReplayServer(engine) as server:
        print(json.dumps({"replay": server.url, "trivial": f"http://127.0.0.1:{port}"}), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    trivial.close()


PATTERN = b"data: "


def _fetch_all(url: str, requests: list[tuple[str, str | None]]) -> list[tuple[int, float, float, float]]:
    """Raw sockets over one selector: per request the events received, the first event and
    the end (seconds after the batch start), and the first event after its own request."""
    host, port = url.removeprefix("http://").split(":")
    selector = selectors.DefaultSelector()
    body = b'{"model":"bench","stream":true,"messages":[]}'
    t0 = time.perf_counter()
    state: dict[socket.socket, list[Any]] = {}
    for path, session in requests:
        head = (f"POST {path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
                f"content-length: {len(body)}\r\nconnection: close\r\n")
        if session is not None:
            head += f"x-session-id: {session}\r\n"
        sock = socket.create_connection((host, int(port)))
        sock.sendall(head.encode() + b"\r\n" + body)
        # count, first (batch), end, first (own), sent, carry
        state[sock] = [0, -1.0, 0.0, -1.0, time.perf_counter(), b""]
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
    open_count = len(state)
    while open_count:
        for key, _ in selector.select():
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            data = sock.recv(1 << 20)
            row = state[sock]
            now = time.perf_counter()
            if not data:
                row[2] = now - t0
                selector.unregister(sock)
                sock.close()
                open_count -= 1
                continue
            if row[1] < 0 and PATTERN in data:
                row[1], row[3] = now - t0, now - row[4]
            joined = row[5] + data
            row[0] += joined.count(PATTERN)
            row[5] = joined[-(len(PATTERN) - 1):]
    selector.close()
    return [(r[0], r[1], r[2], r[3]) for r in state.values()]


def _single(url: str, path: str, session: str | None) -> dict[str, float]:
    count, first, end, _ = _fetch_all(url, [(path, session)])[0]
    return {"events": count, "rate": count / end, "first_ms": first * 1000, "wall": end}


def _many(url: str, paths: list[tuple[str, str | None]]) -> dict[str, float]:
    results = _fetch_all(url, paths)
    events = sum(r[0] for r in results)
    end = max(r[2] for r in results)
    firsts = sorted(r[1] * 1000 for r in results)
    own = sorted(r[3] * 1000 for r in results)
    return {"events": events, "rate": events / end, "first_median_ms": statistics.median(firsts),
            "first_max_ms": firsts[-1], "own_median_ms": statistics.median(own),
            "own_max_ms": own[-1], "wall": end}


def _line(name: str, r: dict[str, float]) -> str:
    extra = (f"first chunk {r['first_ms']:.1f} ms" if "first_ms" in r else
             f"first chunk after its request: median {r['own_median_ms']:.1f} ms, max "
             f"{r['own_max_ms']:.1f} ms (after the batch start: median "
             f"{r['first_median_ms']:.1f}, max {r['first_max_ms']:.1f})")
    return f"  {name:<14} {int(r['events']):>7} events in {r['wall']:.3f} s = {r['rate']:>9,.0f}/s; {extra}"


def _median_run(runs: list[dict[str, float]]) -> dict[str, float]:
    """The run with the median rate (its first-chunk numbers come with it)."""
    return sorted(runs, key=lambda r: r["rate"])[len(runs) // 2]


def _drive(urls: dict[str, str], single: int, sessions: int, each: int, reps: int) -> None:
    replay, trivial = urls["replay"], urls["trivial"]
    # Warm up both endpoints (imports, first-request paths) on separate runs.
    cold = _single(replay, "/runs/warm/v1/chat/completions", "w")
    for i in range(sessions):
        _fetch_all(replay, [("/runs/warm/v1/chat/completions", f"w{i}")])
    _fetch_all(trivial, [("/100", None)])
    floors, drains, ours = [], [], []
    for rep in range(reps):
        floors.append(_single(trivial, f"/{single}", None))
        drains.append(_single(trivial, f"/drain/{single}", None))
        ours.append(_single(replay, f"/runs/single{rep}/v1/chat/completions", None))
    floor, drain, one = _median_run(floors), _median_run(drains), _median_run(ours)
    print(f"one stream of {single:,} chunks (median of {reps}):")
    print(_line("trivial", floor))
    print(_line("trivial+drain", drain))
    print(_line("replay", one))
    print(f"  ratio replay/trivial: {one['rate'] / floor['rate']:.2f}x, replay/trivial+drain: "
          f"{one['rate'] / drain['rate']:.2f}x (target >= 0.75); first chunk <= 5 ms: "
          f"{'yes' if one['first_ms'] <= 5 else 'NO'}")
    print(f"  first call of the entry ever: first chunk {cold['first_ms']:.1f} ms (includes the "
          "one-time scan for fromRequest placeholders)")
    floors_many, ours_many = [], []
    for rep in range(reps):
        floors_many.append(_many(trivial, [(f"/{each}", None)] * sessions))
        # Script 0 is the long one: each run binds it to a throwaway session first.
        _fetch_all(replay, [(f"/runs/many{rep}/v1/chat/completions", "skip")])
        ours_many.append(_many(replay, [(f"/runs/many{rep}/v1/chat/completions", f"s{i}")
                                              for i in range(sessions)]))
    floor_many, many = _median_run(floors_many), _median_run(ours_many)
    print(f"{sessions} concurrent sessions of {each:,} chunks (median of {reps}):")
    print(_line("trivial", floor_many))
    print(_line("replay", many))
    worst = max(r["own_max_ms"] for r in ours_many)
    print(f"  ratio replay/trivial: {many['rate'] / floor_many['rate']:.2f}x; vs one-stream "
          f"floor {many['rate'] / floor['rate']:.2f}x (target >= 0.75)")
    print(f"  fair: every first chunk within {FAIR_MS} ms of its request: "
          f"{'yes' if worst <= FAIR_MS else 'NO'} (worst over all {reps} runs: "
          f"{worst:.1f} ms)")


RELOAD_PACE_MS = 5


async def _serve_reload_child(directory: str) -> None:
    async with serve_scenario(directory, pace_ms=RELOAD_PACE_MS) as server:
        gc.freeze()  # as ``dsh-replay serve`` does once the scenario is loaded
        print(json.dumps({"replay": server.url}), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


def _reload_gaps(url: str, reload_after: float) -> tuple[float, float, float]:
    """Stream the primary's first call (paced) and reload while it streams: the longest gap
    between two chunks before the reload, the longest one while it ran, and its duration."""
    import threading

    import httpx

    times: list[float] = []
    window: list[float] = []

    def reload() -> None:
        window.append(time.perf_counter())
        answer = httpx.post(url + "/replay/v1/reload", timeout=60)
        window.append(time.perf_counter())
        assert answer.status_code == 200, answer.text

    timer = threading.Timer(reload_after, reload)
    with httpx.stream("POST", url + "/v1/chat/completions", timeout=60,
                      json={"messages": [], "stream": True}) as stream:
        timer.start()
        for line in stream.iter_lines():
            if line.startswith("data: "):
                times.append(time.perf_counter())
    timer.join()
    start, end = window
    gaps = [(b - a, b) for a, b in zip(times, times[1:], strict=False)]
    before = max((g for g, at in gaps if at < start), default=0.0)
    during = max((g for g, at in gaps if start <= at <= end + 0.05), default=0.0)
    return before, during, end - start


def _drive_reload(megabytes: int, reps: int) -> None:
    from gen import ensure_log

    directory = HERE / "_data" / f"reload-{megabytes}mb"
    log = ensure_log(directory / "session.jsonl", megabytes * 1_000_000)
    child = subprocess.Popen([sys.executable, __file__, "--child-reload", str(directory)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdin is not None
    url = json.loads(child.stdout.readline())["replay"]
    try:
        runs = []
        for _ in range(reps):
            httpx_reset(url)
            runs.append(_reload_gaps(url, 0.3))
        before = statistics.median(r[0] for r in runs)
        during = statistics.median(r[1] for r in runs)
        took = statistics.median(r[2] for r in runs)
        print(f"reload of {log.stat().st_size / 1e6:.1f} MB while a stream is paced at "
              f"{RELOAD_PACE_MS} ms a chunk (median of {reps}):")
        print(f"  reload took {took * 1000:.0f} ms; longest gap between chunks: before it "
              f"{before * 1000:.1f} ms, during it {during * 1000:.1f} ms "
              f"(stall {during / max(before, 1e-9):.1f}x the paced gap)")
    finally:
        child.stdin.close()
        child.wait(timeout=30)


def httpx_reset(url: str) -> None:
    """Forget the default run's bindings, so its first call streams again."""
    import httpx

    httpx.post(url + "/replay/v1/reset", timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--each", type=int, default=2_000)
    parser.add_argument("--reps", type=int, default=5, help="repetitions (the median is shown)")
    parser.add_argument("--no-freeze", action="store_true", help="skip gc.freeze() in the server")
    parser.add_argument("--reload-mb", type=int, default=0,
                        help="measure the stall of a reload of a scenario this size instead")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child-reload", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.reload_mb:
        _drive_reload(args.reload_mb, args.reps)
        return
    try:
        import uvloop

        factory: Any = uvloop.new_event_loop
    except ImportError:
        factory = None
    if args.child_reload:
        with asyncio.Runner(loop_factory=factory) as runner:
            runner.run(_serve_reload_child(args.child_reload))
        return
    if args.child:
        with asyncio.Runner(loop_factory=factory) as runner:
            runner.run(_serve_child(args.chunks, args.sessions, args.each, not args.no_freeze))
        return
    child = subprocess.Popen([sys.executable, __file__, "--child", "--chunks", str(args.chunks),
                              "--sessions", str(args.sessions), "--each", str(args.each),
                              *(["--no-freeze"] if args.no_freeze else [])],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdin is not None
    urls = json.loads(child.stdout.readline())
    try:
        _drive(urls, args.chunks, args.sessions, args.each, args.reps)
    finally:
        child.stdin.close()
        child.wait(timeout=30)


if __name__ == "__main__":
    main()
