"""Benchmark: what the replay server keeps in memory under hostile or long-lived traffic.

Run by hand: ``python3 benchmarks/memory.py [flood|journal|runs|all] [--flood-mb 100]``.
A child process serves a small scenario (httptools or h11: ``--http``); this process
measures the child's resident set (``/proc/PID/status`` VmRSS) before and after:

- flood: one request head of ``--flood-mb`` MB of header lines (answered 431 at 64 KiB);
- journal: ``--requests`` chat requests of 25 MB each (half served, half refused past the
  recording);
- runs: 10,000 runs of one call each (``/runs/rN/``), RSS per run after 1,000 and 10,000.

The baseline is the same child's RSS before the traffic; the figures print as growth in MB
and as a ratio of the bytes sent.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent

_SERVE = """
import asyncio, sys
from replay_engine import ReplayEngine, load_scenario
from replay_engine.server import ReplayServer

async def main():
    engine = ReplayEngine(load_scenario(sys.argv[1]).scripts)
    kwargs = {} if sys.argv[2] == "auto" else {"http": sys.argv[2]}
    async with ReplayServer(engine, **kwargs) as server:
        print(server.url, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(main())
"""


def _scenario(root: Path, calls: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "session.jsonl").write_text(json.dumps({"type": "session", "id": "p", "createdAt": 1})
                                        + "\n")
    entry = {"kind": "chunks", "chunks": [{"type": "text-delta", "index": 0, "text": "ok"},
                                          {"type": "finish", "reason": {"kind": "stop"}}]}
    (root / "replay.override.json").write_text(json.dumps([entry] * calls))
    return root


def rss_mb(pid: int) -> float:
    """Resident set of ``pid`` in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


class Child:
    """A replay server in a child process serving a scenario of ``calls`` calls."""

    def __init__(self, calls: int, http: str) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        scenario = _scenario(Path(self.tmp.name) / "sc", calls)
        self.proc = subprocess.Popen([sys.executable, "-c", _SERVE, str(scenario), http],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     cwd=HERE.parent)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()

    def rss(self) -> float:
        return rss_mb(self.proc.pid)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        self.tmp.cleanup()


def flood(http: str, megabytes: int) -> None:
    child = Child(1, http)
    try:
        httpx.get(child.url + "/healthz")
        before = child.rss()
        host, port = child.url.removeprefix("http://").rsplit(":", 1)
        block = (b"X-Flood: " + b"f" * 1013 + b"\r\n") * 1024  # 1 MiB of header lines
        sent, answer = 0, b""
        start = time.perf_counter()
        with socket.create_connection((host, int(port)), timeout=60) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            try:
                while sent < megabytes * 1024 * 1024:
                    sock.sendall(block)
                    sent += len(block)
                sock.sendall(b"\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass
            try:
                while chunk := sock.recv(65536):
                    answer += chunk
            except (ConnectionResetError, TimeoutError):
                pass
        took = time.perf_counter() - start
        after = child.rss()
        status = answer.split(b"\r\n", 1)[0].decode("latin-1") or "(connection closed)"
        print(f"flood [{http}]: sent {sent / 1e6:.0f} MB of header lines in {took:.1f} s; "
              f"answer {status!r}")
        print(f"  RSS before {before:.1f} MB, after {after:.1f} MB: +{after - before:.1f} MB "
              f"({(after - before) * 1024 * 1024 / max(sent, 1):.3f} x the bytes sent)")
    finally:
        child.close()


def journal(http: str, requests: int = 10) -> None:
    child = Child(requests // 2, http)
    try:
        with httpx.Client(timeout=120) as client:
            client.post(child.url + "/v1/chat/completions",
                        json={"model": "m", "messages": [{"role": "user", "content": "warm"}]})
            client.post(child.url + "/replay/v1/reset")
            before = child.rss()
            pad = "x" * (25 * 1000 * 1000)
            statuses = []
            for n in range(requests):
                body = {"model": "m", "messages": [{"role": "user", "content": f"{n} {pad}"}]}
                statuses.append(client.post(child.url + "/v1/chat/completions",
                                            json=body).status_code)
            after = child.rss()
            kept = len(client.get(child.url + "/replay/v1/journal").content)
        print(f"journal [{http}]: {requests} requests of 25 MB, answered {statuses}")
        print(f"  RSS before {before:.1f} MB, after {after:.1f} MB: +{after - before:.1f} MB "
              f"({(after - before) / (25 * requests):.3f} x the {25 * requests} MB sent); "
              f"journal JSON {kept / 1e3:.0f} kB")
    finally:
        child.close()


def runs(http: str, total: int = 10_000) -> None:
    child = Child(1, http)
    body = {"model": "m", "messages": [{"role": "user", "content": "go"}]}
    try:
        with httpx.Client(timeout=60) as client:
            for n in range(50):  # warm the allocator and the caches
                client.post(f"{child.url}/runs/warm{n}/v1/chat/completions", json=body)
            before = child.rss()
            marks: dict[int, float] = {}
            for n in range(1, total + 1):
                client.post(f"{child.url}/runs/r{n}/v1/chat/completions", json=body)
                if n in (1000, total):
                    marks[n] = child.rss()
            state = client.get(f"{child.url}/runs/r1/replay/v1/state").json()
        for n, rss in marks.items():
            print(f"runs [{http}]: after {n} runs RSS +{rss - before:.1f} MB "
                  f"({(rss - before) * 1024 * 1024 / n:.0f} bytes a run)")
        print(f"  growth from {min(marks)} to {total} runs: "
              f"+{marks[total] - marks[min(marks)]:.1f} MB; run r1 still bound: "
              f"{bool(state.get('bindings'))}")
    finally:
        child.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", nargs="?", default="all", choices=["flood", "journal", "runs", "all"])
    parser.add_argument("--http", default="auto", choices=["auto", "h11", "httptools"])
    parser.add_argument("--flood-mb", type=int, default=100)
    parser.add_argument("--requests", type=int, default=10, help="25 MB requests (journal)")
    args = parser.parse_args()
    if args.what in ("flood", "all"):
        flood(args.http, args.flood_mb)
    if args.what in ("journal", "all"):
        journal(args.http, args.requests)
    if args.what in ("runs", "all"):
        runs(args.http)


if __name__ == "__main__":
    main()
