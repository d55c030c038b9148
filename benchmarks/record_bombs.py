"""Peak memory of ``dsh-replay record`` under hostile upstream answers.

    python3 benchmarks/record_bombs.py [--only NAME ...]

Each case starts a fresh ``dsh-replay record`` subprocess against a loopback upstream run by
this script, sends one call (or one ``GET /v1/models``), waits for the recorder to answer it
and reads the recorder's peak RSS (``VmHWM`` of ``/proc/<pid>/status``). The baseline is the
same recorder after one ordinary streamed call, measured in the same run; each case prints its
peak, its ratio to the baseline, how long the call took, the longest ``GET /healthz`` another
client waited meanwhile (the event loop kept from others), and the recorded failure code.
Cases: a gzip answer of 1 MiB inflating to 1 GiB (stream: false), the same as an error body
(HTTP 500), a gzip event stream of valid deltas inflating without end, an endless plain event
stream, an endless model list.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

MIB = 1024 * 1024


def gzip_bomb(size: int) -> bytes:
    """A gzip member of ``size`` zero bytes (about 1 MiB per GiB)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"\0" * MIB
    return b"".join(z.compress(block) for _ in range(size // MIB)) + z.flush()


def chat_event(text: str) -> bytes:
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
             "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def endless_events() -> Iterator[bytes]:
    piece = b"".join(chat_event(f"word{n} ") for n in range(200))
    while True:
        yield piece


def gzip_events() -> Iterator[bytes]:
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    piece = b"".join(chat_event("same ") for _ in range(20000))
    while True:
        out = z.compress(piece) + z.flush(zlib.Z_SYNC_FLUSH)
        if out:
            yield out


def endless_list() -> Iterator[bytes]:
    yield b'{"object":"list","data":['
    while True:
        yield b'{"id":"model","object":"model"},' * 1000


Body = Callable[[], Iterator[bytes]]


class Upstream:
    """Answers every request with ``head`` and then ``body()``'s pieces, chunked."""

    def __init__(self) -> None:
        self.head = b""
        self.body: Body = lambda: iter(())
        self.server: asyncio.Server | None = None

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.decode("latin-1").split("\r\n"):
                name, _, value = line.partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            await reader.readexactly(length)
            writer.write(self.head)
            for piece in self.body():
                writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


def head(status: int, content_type: str, gzipped: bool) -> bytes:
    lines = [f"HTTP/1.1 {status} X", f"content-type: {content_type}",
             "transfer-encoding: chunked", "connection: close"]
    if gzipped:
        lines.append("content-encoding: gzip")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM")


async def probe(base: str, done: asyncio.Event) -> float:
    """The longest ``GET /healthz`` of the recorder while ``done`` is unset (how long the
    hostile answer kept the recorder from serving anyone else)."""
    worst = 0.0
    async with httpx.AsyncClient(timeout=120) as http:
        while not done.is_set():
            start = time.perf_counter()
            await http.get(base + "/healthz")
            worst = max(worst, time.perf_counter() - start)
            await asyncio.sleep(0.01)
    return worst


async def run_case(upstream: Upstream, name: str, method: str, path: str, stream: bool
                   ) -> tuple[int, float, float, str]:
    """Peak RSS (kB), seconds the call took, the longest health check meanwhile, and what the
    recorder recorded."""
    with tempfile.TemporaryDirectory() as tmp:
        url = await upstream.start()
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "replay_engine.cli", "record", str(Path(tmp) / "rec"),
            "--upstream", url, "--port", "0", stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        assert proc.stdout is not None and proc.stderr is not None
        base = (await proc.stdout.readline()).decode().strip()
        done = asyncio.Event()
        prober = asyncio.create_task(probe(base, done))
        start = time.perf_counter()
        body = {"model": "m", "stream": stream, "messages": [{"role": "user", "content": name}]}
        async with httpx.AsyncClient(timeout=120) as http:
            try:
                async with http.stream(method, base + path, json=body if method == "POST"
                                       else None) as response:
                    async for _ in response.aiter_raw():
                        pass
            except httpx.HTTPError:
                pass
        took = time.perf_counter() - start
        done.set()
        worst = await prober
        recorded = "-"
        if method == "POST":
            line = await asyncio.wait_for(proc.stderr.readline(), 60)
            recorded = line.decode().strip().rpartition("): ")[2][:90]
        peak = peak_rss_kb(proc.pid)
        proc.terminate()
        await proc.communicate()
        assert upstream.server is not None
        upstream.server.close()
        return peak, took, worst, recorded


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    bomb = gzip_bomb(1024 * MIB)
    print(f"gzip bomb: {len(bomb) / MIB:.2f} MiB inflating to 1024 MiB")
    cases: list[tuple[str, bytes, Body, str, str, bool]] = [
        ("baseline", head(200, "text/event-stream", False),
         lambda: iter([chat_event("hello"), b"data: [DONE]\n\n"]),
         "POST", "/v1/chat/completions", True),
        ("gzip-answer", head(200, "application/json", True), lambda: iter([bomb]),
         "POST", "/v1/chat/completions", False),
        ("gzip-error", head(500, "application/json", True), lambda: iter([bomb]),
         "POST", "/v1/chat/completions", False),
        ("gzip-stream", head(200, "text/event-stream", True), gzip_events,
         "POST", "/v1/chat/completions", True),
        ("endless-stream", head(200, "text/event-stream", False), endless_events,
         "POST", "/v1/chat/completions", True),
        ("endless-models", head(200, "application/json", False), endless_list,
         "GET", "/v1/models", False),
    ]
    baseline = None
    for name, answer_head, body, method, path, stream in cases:
        if args.only and name not in args.only and name != "baseline":
            continue
        upstream = Upstream()
        upstream.head, upstream.body = answer_head, body
        peak, took, worst, recorded = await run_case(upstream, name, method, path, stream)
        baseline = baseline or peak
        print(f"{name:15} peak RSS {peak / 1024:7.1f} MiB  x{peak / baseline:5.2f}  "
              f"call {took:6.2f} s  longest healthz {worst * 1000:6.0f} ms  {recorded}")


if __name__ == "__main__":
    asyncio.run(main())
