"""Benchmark the debugger headless: first paint of a 100 MB scenario, key round-trip while 50
sessions stream at full speed, and the delay from writing a changed 1 MB log to the updated tree.

Run by hand: ``python3 benchmarks/tui.py [--mb 100] [--sessions 50] [--keys 40] [--rounds 3]
[--only-paint | --only-keys]``.
Targets: first paint <= 0.5 s; the painted key round-trip one frame (33 ms) median and under
100 ms max; reload-to-tree <= 300 ms. Each number is printed with a baseline measured in the
same run (the bare load, the key round-trip with nothing streaming, the bare load of the 1 MB
log); first paint and bare load are the best of ``--rounds`` (a shared machine adds noise, never
speed).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from dsh_replay_tui.app import AppOptions, ReplayApp  # noqa: E402
from gen import ensure_log, write_log  # noqa: E402
from textual import events  # noqa: E402

from replay_engine.scenario.loading import load_scenario  # noqa: E402

DATA = HERE / "_data"
MB = 1_000_000
SIZE = (160, 45)
FIRST_PAINT_S = 0.5
KEY_MEDIAN_S = 1 / 30
"""One frame."""
KEY_MAX_S = 0.1
THINK_S = 0.1
"""Pause between key presses (about ten keys a second)."""

# A separate process plays the agents, so their client work does not share the app's loop.
AGENTS = """
import asyncio, sys, httpx
URL, N = sys.argv[1], int(sys.argv[2])
async def agent(http, i):
    key = f"agent-{i}"
    try:
        while True:
            async with http.stream("POST", "/replay/v1/stream", json={"sessionId": key}) as r:
                if r.status_code != 200:
                    return
                async for _ in r.aiter_raw():
                    pass
    except httpx.HTTPError:
        return  # the server went away: the benchmark is over
async def main():
    limits = httpx.Limits(max_connections=N + 5)
    async with httpx.AsyncClient(base_url=URL, timeout=None, limits=limits) as http:
        await asyncio.gather(*(agent(http, i) for i in range(N)))
asyncio.run(main())
"""


def app_on(root: Path, *, watch: bool = False, serve: bool = False) -> ReplayApp:
    return ReplayApp(AppOptions(scenario=root, port=0, watch=watch, serve=serve))


async def first_paint(root: Path) -> tuple[float, float]:
    """Seconds from starting the app to the primary's first rows painted (``first_rows``, then
    the repaint after it), and to the whole scenario loaded and painted (``ready``)."""
    start = time.perf_counter()
    app = app_on(root)
    async with app.run_test(size=SIZE):
        await app.first_rows.wait()
        await painted(app)
        assert app.scripts_view.row_count > 1, "no call row painted"
        rows = time.perf_counter() - start
        await app.ready.wait()
        await painted(app)
        assert app.scenario is not None and app.scripts_view.loading_note is None
        return rows, time.perf_counter() - start


async def painted(app: ReplayApp) -> None:
    """Wait for the screen's next repaint (what is shown now is then on screen)."""
    done = asyncio.get_running_loop().create_future()
    app.screen.call_after_refresh(lambda: done.done() or done.set_result(None))
    await done


Trips = tuple[list[float], list[float]]


async def key_round_trips(root: Path, sessions: int, keys: int) -> tuple[Trips, Trips, int]:
    """Key round-trips (s) idle, then while ``sessions`` agents stream; and chunks served meanwhile.

    Each is (key handled: the call pane holds the new call, key painted: the repaint after it).
    """
    app = app_on(root, serve=True)
    served = 0

    def count(event: object) -> None:
        nonlocal served
        if type(event).__name__ == "ChunkServed":
            served += 1

    async with app.run_test(size=SIZE) as pilot:
        await app.ready.wait()
        app.engine.subscribe(count)
        await pilot.press("down")  # onto call #0 of script 0

        view = app.scripts_view

        async def presses() -> tuple[list[float], list[float]]:
            # A key goes through the app's queue, the bindings, the list's cursor, a
            # CallSelected message and the call pane; timed until the repaint after that.
            out, seen = [], []
            for i in range(keys):
                key = "down" if i % 8 < 4 else "up"
                want = view.locate(view.cursor + (1 if key == "down" else -1))
                t = time.perf_counter()
                app.post_message(events.Key(key, None))
                while app.call_pane.view is None or (
                        app.call_pane.view.script_index, app.call_pane.view.call_index) != want:
                    await asyncio.sleep(0)
                seen.append(time.perf_counter() - t)
                await painted(app)
                out.append(time.perf_counter() - t)
                await asyncio.sleep(THINK_S)
            return seen, out

        idle = await presses()
        agents = subprocess.Popen([sys.executable, "-c", AGENTS, app.url or "", str(sessions)])
        try:
            while len(app.engine.state().bindings) < sessions:
                await app.next_flush()
            before = served
            busy = await presses()
            streamed = served - before
        finally:
            agents.terminate()
            agents.wait()
        return idle, busy, streamed


async def reload_latency(root: Path, rounds: int) -> list[float]:
    """Seconds from writing a changed 1 MB log to the tree showing the change."""
    app = app_on(root, watch=True)
    log = root / "session.jsonl"
    out = []
    async with app.run_test(size=SIZE):
        await app.ready.wait()
        await app.watching.wait()
        for i in range(rounds):
            text = log.read_text(encoding="utf-8")
            marker = f"reloaded-{i}"
            changed = text.replace('"texts":["', f'"texts":["{marker} ', 1)
            assert changed != text, "the generated log has no text delta to change"
            count = len(app.live_pane.lines)
            tmp = log.with_name(".session.jsonl.tmp")
            tmp.write_text(changed, encoding="utf-8")
            start = time.perf_counter()
            os.replace(tmp, log)
            while not any(x.startswith("reloaded:") for x in app.live_pane.lines[count:]):
                await app.next_flush()
            out.append(time.perf_counter() - start)
            assert "~1 changed" in app.live_pane.lines[-1], app.live_pane.lines[-1]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--keys", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only-paint", action="store_true",
                        help="measure the first paint only (skip the key and reload figures)")
    parser.add_argument("--only-keys", action="store_true",
                        help="measure the key round-trips only (skip the first paint and reload)")
    args = parser.parse_args()
    if not args.only_keys:
        paint_figures(args.mb, args.rounds)
    if args.only_paint:
        return
    key_and_reload_figures(args.sessions, args.keys, reload=not args.only_keys)


def paint_figures(mb: int, rounds: int) -> None:
    """Print the first paint of an ``mb`` MB scenario (best of ``rounds``)."""

    big = DATA / f"scenario-{mb}mb"
    ensure_log(big / "session.jsonl", mb * MB)
    bares, paints, fulls = [], [], []
    for _ in range(rounds):
        t = time.perf_counter()
        load_scenario(big)
        bares.append(time.perf_counter() - t)
        rows, full = asyncio.run(first_paint(big))
        paints.append(rows)
        fulls.append(full)
    bare, paint, loaded = min(bares), min(paints), min(fulls)
    print(f"first paint of a {mb} MB scenario (the primary's first calls on screen, "
          f"marked loading): {paint:.2f} s (target <= {FIRST_PAINT_S} s); bare load_scenario "
          f"{bare:.2f} s; ratio {paint / bare:.2f}x")
    print(f"  whole scenario loaded and painted (app.ready): {loaded:.2f} s; ratio "
          f"{loaded / bare:.2f}x the bare load")


def key_and_reload_figures(sessions: int, keys: int, *, reload: bool) -> None:
    """Print the key round-trips while ``sessions`` stream, then (``reload``) reload-to-tree."""
    with tempfile.TemporaryDirectory() as tmp:
        many = Path(tmp) / "many"
        many.mkdir()
        small = DATA / "tui-1mb.jsonl"
        if not small.is_file():
            write_log(small, MB, seed=7)
        shutil.copy(small, many / "session.jsonl")
        for i in range(1, sessions):
            os.link(small, many / f"session.{i}.jsonl")
        idle, busy, streamed = asyncio.run(key_round_trips(many, sessions, keys))
        for name, i in (("handled", 0), ("painted", 1)):
            med_idle, med_busy = statistics.median(idle[i]), statistics.median(busy[i])
            target = (f"target median <= {KEY_MEDIAN_S * 1000:.0f} ms, max < "
                      f"{KEY_MAX_S * 1000:.0f} ms" if name == "painted" else "no target")
            print(f"key round-trip ({name}), {sessions} sessions streaming at full speed: "
                  f"median {med_busy * 1000:.1f} ms, max {max(busy[i]) * 1000:.1f} ms "
                  f"({target}); idle median {med_idle * 1000:.1f} ms; ratio "
                  f"{med_busy / med_idle:.2f}x")
        print(f"  {streamed} chunks served during the presses")
        if not reload:
            return

        one = Path(tmp) / "one"
        one.mkdir()
        shutil.copy(small, one / "session.jsonl")
        t = time.perf_counter()
        load_scenario(one)
        bare_small = time.perf_counter() - t
        latencies = asyncio.run(reload_latency(one, 5))
        med = statistics.median(latencies)
        print(f"changed 1 MB log -> updated tree: median {med * 1000:.0f} ms, max "
              f"{max(latencies) * 1000:.0f} ms (target <= 300 ms; includes the watcher's "
              f"debounce); bare load {bare_small * 1000:.0f} ms; ratio {med / bare_small:.1f}x")


if __name__ == "__main__":
    main()
