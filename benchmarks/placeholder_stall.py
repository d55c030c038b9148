"""Benchmark: how long runaway ``{{fromRequest}}`` patterns of some runs stall another run's stream.

Run by hand: ``python3 benchmarks/placeholder_stall.py [--bad 20] [--chunks 1500]``.
One server (uvloop when installed) streams a long paced call (1 ms per chunk) in run
``good`` while ``--bad`` calls whose pattern backtracks until its timeout arrive at once,
either all in one run or each in its own. The stall is the largest gap between two chunks
of the good stream (taken from the engine's own chunk events) minus the pace. Baseline,
measured in the same run: the same engine with a pool as wide as anyio's default (40
workers, no per-run limit), which is how patterns ran before the engine had its own pool.

Target on a 2-core machine: the good stream never stalls more than 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import httpx  # noqa: E402

from replay_engine import ChunksEntry, ReplayEngine, ScriptEntry, SessionScript  # noqa: E402
from replay_engine import events as ev  # noqa: E402
from replay_engine.server import ReplayServer  # noqa: E402

BAD_PATTERN = "{{fromRequest:(a|a)+$}}"
"""Backtracks exponentially on ``a…a!``: runs until the pattern timeout (1 s)."""
BAD_TEXT = "a" * 40 + "!"
FIN = {"type": "finish", "reason": {"kind": "stop"}}


def _script(name: str, chunks: list[dict[str, Any]], primary: bool) -> SessionScript:
    entry = ChunksEntry.model_construct(kind="chunks", chunks=[
        {"type": "block-start", "index": 0, "blockType": "text"}, *chunks, FIN])
    return SessionScript(name, 0, [ScriptEntry(entry, "derived")], primary)


def _scripts(bad: int, chunks: int) -> list[SessionScript]:
    good = _script("good", [{"type": "text-delta", "index": 0, "text": f"t{i} "}
                            for i in range(chunks)], True)
    return [good, *(_script(f"bad{i}", [{"type": "text-delta", "index": 0, "text": BAD_PATTERN}],
                            False) for i in range(bad))]


_FIRE = """
import socket, sys, json
host, port, body_text = sys.argv[1], int(sys.argv[2]), sys.argv[3]
socks = []
for path in sys.argv[4:]:
    body = json.dumps({"sessionId": path, "messages": [{"role": "user", "content": body_text}]})
    s = socket.create_connection((host, port))
    socks.append((s, (f"POST {path} HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: close\\r\\n"
                      f"Content-Type: application/json\\r\\nContent-Length: {len(body)}\\r\\n\\r\\n"
                      + body).encode()))
for s, request in socks:
    s.sendall(request)
for s, _ in socks:
    while s.recv(65536):
        pass
"""
"""A child process that sends every bad call at once over raw sockets and reads the answers
(kept out of the server's process so client work does not count as a stall)."""


def _fire(url: str, paths: list[str]) -> subprocess.Popen[bytes]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return subprocess.Popen([sys.executable, "-c", _FIRE, host, port, BAD_TEXT, *paths])


async def _measure(bad: int, chunks: int, own_runs: bool, workers: int, per_run: int) -> float:
    engine = ReplayEngine(_scripts(bad, chunks), 1, placeholder_workers=workers,
                          placeholder_workers_per_run=per_run)
    stamps: list[float] = []

    def on_chunk(event: ev.EngineEvent) -> None:
        if isinstance(event, ev.ChunkServed) and event.run == "good":
            stamps.append(time.perf_counter())

    engine.subscribe(on_chunk)
    runs = [f"bad{i}" for i in range(bad)] if own_runs else ["bad"]
    for run in runs:  # each bad run's first session takes the good script: bind and drop it
        engine.open_call("claim", run=run)
        engine.cancel("claim", run=run)
    async with ReplayServer(engine) as server, httpx.AsyncClient(timeout=60) as client:
        paths = [f"/runs/{runs[i % len(runs)]}/replay/v1/stream" for i in range(bad)]
        fired: list[subprocess.Popen[bytes]] = []
        async with client.stream("POST", server.url + "/runs/good/replay/v1/stream",
                                 json={"sessionId": "g"}) as answer:
            async for _ in answer.aiter_bytes():
                if not fired and len(stamps) >= 50:  # the stream flows: let the patterns loose
                    fired.append(_fire(server.url, paths))
        while fired[0].poll() is None:  # the bad calls end (their pattern times out)
            await asyncio.sleep(0.05)
    gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    return max(gaps) - 0.001


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bad", type=int, default=20)
    parser.add_argument("--chunks", type=int, default=1500)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    try:
        import uvloop
        loop_factory: Any = uvloop.new_event_loop
    except ImportError:
        loop_factory = None
    print(f"{args.bad} runaway patterns beside one paced stream of {args.chunks} chunks; "
          f"stall = largest gap between its chunks minus the 1 ms pace (worst of {args.reps})")
    for own_runs in (False, True):
        where = "each in its own run" if own_runs else "all in one run"
        results = {}
        for label, workers, per_run in (("engine pool", None, None), ("baseline 40 wide", 40, 40)):
            values = []
            for _ in range(args.reps):
                with asyncio.Runner(loop_factory=loop_factory) as runner:
                    kwargs = {} if workers is None else {"workers": workers, "per_run": per_run}
                    values.append(runner.run(_measure(
                        args.bad, args.chunks, own_runs, kwargs.get("workers", _default()[0]),
                        kwargs.get("per_run", _default()[1]))))
            results[label] = values
        ours, base = max(results["engine pool"]), max(results["baseline 40 wide"])
        print(f"  {where}: engine pool worst stall {ours * 1000:.1f} ms "
              f"(runs: {', '.join(f'{v * 1000:.1f}' for v in results['engine pool'])}); baseline "
              f"{base * 1000:.1f} ms; ratio {ours / base:.2f}x; target <= 50 ms: "
              f"{'ok' if ours <= 0.050 else 'MISSED'}")


def _default() -> tuple[int, int]:
    from replay_engine.engine.resolving import PLACEHOLDER_WORKERS

    return PLACEHOLDER_WORKERS, 1


if __name__ == "__main__":
    main()
