"""Benchmark: load + derive a ~100 MB session log against decode-only floors, in three shapes.

Run by hand: ``python3 benchmarks/derive.py [--mb 100] [--reps 5]``. Three logs are built once
into ``benchmarks/_data/`` (reused afterwards): the generated "packed" shape (90 % of delta
runs in packed rows), the "corpus" shape (the conformance corpus's own logs replicated:
mostly single chunk lines and large non-chunk events, few packed rows) and the "v4" shape
(the generations corpus's own v4 logs replicated: settlement events with their streams;
each corpus shape is skipped when its corpus is absent); "packed-v4" sets the packed log
beside its v4 rendering (the same calls as settlement events). Targets on a 2-core machine: packed
load <= 1.0 s wall and peak RSS <= 2.5x the file size; the whole ``dsh-replay validate``
process on the corpus and v4 shapes <= 1.0x an orjson-per-line parse process of the same
file; the packed log's ``validate`` process <= 0.31x an orjson read of it that keeps each
line's value, and its v4 rendering's no slower than it; ``dsh-replay --help`` <= 150 ms.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import msgspec  # noqa: E402
import orjson  # noqa: E402
from gen import VERSION as GEN_VERSION  # noqa: E402
from gen import (  # noqa: E402
    ensure_corpus_log,
    ensure_generation_log,
    ensure_log,
    ensure_packed_v4,
    write_log,
)

from replay_engine import derive_replay_script, load_scenario, parse_session_log  # noqa: E402
from replay_engine.scenario.derive_fast import load_log  # noqa: E402
from replay_engine.scenario.logcheck import check_log  # noqa: E402

DATA = HERE / "_data"
MB = 1_000_000

RSS_CHILD = """
import resource, sys, time
sys.path.insert(0, {root!r})
import replay_engine
from replay_engine.scenario.derive_fast import load_log
from replay_engine.scenario.loading import load_scenario
def hwm():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM"))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
loaded = {call}
t = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(base * 1024, peak * 1024, hwm() * 1024, t)
"""


def _rounds(fns: dict[str, Callable[[], Any]], reps: int) -> dict[str, tuple[list[float], list[float]]]:
    """Wall and CPU seconds of each function, run once per round in turn.

    Interleaving keeps the floors and the loader under the same load when the machine is
    shared; CPU time is steadier than wall time there.
    """
    out: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            t, c = time.perf_counter(), time.process_time()
            result = fn()
            out[name][0].append(time.perf_counter() - t)
            out[name][1].append(time.process_time() - c)
            del result
            gc.collect()
    return out


def _floor_json(path: Path) -> None:
    loads = json.loads
    with open(path, "rb") as handle:
        for line in handle:
            if line.strip():
                loads(line)


def _floor_msgspec(path: Path) -> None:
    decode = msgspec.json.Decoder().decode
    with open(path, "rb") as handle:
        for line in handle:
            if line.strip():
                decode(line)


def _floor_orjson(path: Path) -> None:
    loads = orjson.loads
    with open(path, "rb") as handle:
        for line in handle:
            if line.strip():
                loads(line)


ORJSON_PROCESS = """
import orjson, sys
loads = orjson.loads
with open(sys.argv[1], "rb") as handle:
    for line in handle:
        if line.strip():
            loads(line)
"""


ORJSON_READ_PROCESS = """
import orjson, sys
loads = orjson.loads
with open(sys.argv[1], "rb") as handle:
    values = [loads(line) for line in handle if line.strip()]
"""
"""An orjson-per-line read: each line's value kept, as a reader that loads the log holds it."""

TREE_VALIDATE = """
import sys
sys.path.insert(0, sys.argv[1])
from replay_engine.cli.dispatch import run
sys.argv = ["dsh-replay", "validate", sys.argv[2]]
run()
"""
"""``dsh-replay validate`` run from another checkout's tree (``--before``)."""


def _process(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of a whole process, start-up included."""
    t = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise subprocess.CalledProcessError(child.returncode, argv)
    return wall, usage.ru_utime + usage.ru_stime


def _process_rounds(runs: dict[str, list[str]], reps: int) -> dict[str, tuple[list[float], list[float]]]:
    """Wall and CPU seconds of each command, interleaved round by round like ``_rounds``."""
    out: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in runs}
    for _ in range(reps):
        for name, argv in runs.items():
            wall, cpu = _process(argv)
            out[name][0].append(wall)
            out[name][1].append(cpu)
    return out


def _report_processes(timed: dict[str, tuple[list[float], list[float]]], floor: str, target: float) -> None:
    """Best and median wall, median CPU, and the median per-round ratios (wall and CPU) to the floor."""
    floor_walls, floor_cpus = timed[floor]
    for name, (walls, cpus) in timed.items():
        ratio = statistics.median(w / f for w, f in zip(walls, floor_walls, strict=True))
        cpu_ratio = statistics.median(c / f for c, f in zip(cpus, floor_cpus, strict=True))
        verdict = "" if name == floor else f"  (<= {target:.2f}x: {'ok' if ratio <= target else 'MISSED'})"
        print(f"  {name:32} wall best {min(walls):6.3f} s  median {statistics.median(walls):6.3f} s"
              f"  cpu median {statistics.median(cpus):6.3f} s  {ratio:5.2f}x wall {cpu_ratio:5.2f}x cpu"
              f"{verdict}")


def _dsh_replay() -> list[str]:
    """The installed ``dsh-replay`` next to this interpreter, else the module."""
    script = Path(sys.executable).with_name("dsh-replay")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "replay_engine.cli"]


def corpus_shape(mb: int, reps: int) -> None:
    """The realistic log: load in-process vs floors, and the whole validate process vs orjson."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    from conftest import conformance_dir  # the tests' lookup of ../shared/conformance

    corpus = conformance_dir()
    if corpus is None:
        print("corpus shape: skipped (conformance corpus absent; set DSH_REPLAY_CONFORMANCE_DIR)")
        return
    scenario = DATA / f"corpus-{mb}mb"
    log = ensure_corpus_log(scenario / "session.jsonl", mb * MB, corpus)
    data = log.read_bytes()
    packed = sum(data.count(f'"type":"{k}"'.encode()) for k in ("text-chunks", "reasoning-chunks",
                                                                 "tool-call-chunks"))
    chunk_lines = data.count(b'"type":"assistant/chunk"')
    del data
    _measure_shape("corpus shape", scenario, log, reps,
                   f"{chunk_lines} chunk lines, about {packed} packed rows")


def v4_shape(mb: int, reps: int) -> None:
    """The current generation: settlements with their streams (docs/format.md#generations), same
    measurements."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    from conftest import conformance_gen_dir  # the tests' lookup of ../shared/conformance-gen

    corpus = conformance_gen_dir()
    if corpus is None:
        print("v4 shape: skipped (generations corpus absent; set DSH_REPLAY_CONFORMANCE_GEN_DIR)")
        return
    scenario = DATA / f"v4-{mb}mb"
    log = ensure_generation_log(scenario / "session.v4.jsonl", mb * MB, corpus, 4)
    data = log.read_bytes()
    settlements = data.count(b'"type":"assistant/message"') + data.count(
        b'"type":"assistant/attempt"')
    del data
    _measure_shape("v4 shape", scenario, log, reps, f"{settlements} settlement lines")


def _measure_shape(title: str, scenario: Path, log: Path, reps: int, what: str) -> None:
    """A corpus-made log: load in-process vs floors, and the whole validate process vs orjson."""
    size = log.stat().st_size
    lines = log.read_bytes().count(b"\n")
    loaded = load_log(log)
    print(f"{title} {log.relative_to(HERE.parent)}: {size / MB:.1f} MB, {lines} lines ({what}), "
          f"{loaded.event_count} events, {len(loaded.entries)} calls")
    del loaded
    gc.collect()
    print(f"  in-process ({reps} rounds)")
    timed = _rounds(
        {
            "floor: orjson.loads per line": lambda: _floor_orjson(log),
            "floor: msgspec decode per line": lambda: _floor_msgspec(log),
            "load_log": lambda: load_log(log),
            "check_log (what validate runs)": lambda: check_log(log),
        },
        reps,
    )
    floors = {"orjson floor": timed["floor: orjson.loads per line"][0],
              "msgspec floor": timed["floor: msgspec decode per line"][0]}
    for name, result in timed.items():
        _report("  " + name, result, size, floors)
    print(f"  whole processes ({reps} rounds; ratio: median of per-round ratios)")
    _report_processes(
        _process_rounds(
            {
                "floor: orjson-per-line process": [sys.executable, "-c", ORJSON_PROCESS, str(log)],
                "dsh-replay validate": [*_dsh_replay(), "validate", str(scenario)],
            },
            reps,
        ),
        "floor: orjson-per-line process",
        1.0,
    )


def start_up(reps: int) -> None:
    """``dsh-replay --help`` against a bare interpreter start."""
    print(f"start-up ({max(reps, 10)} rounds)")
    timed = _process_rounds(
        {"floor: python -c pass": [sys.executable, "-c", "pass"],
         "dsh-replay --help": [*_dsh_replay(), "--help"],
         "dsh-replay validate --help": [*_dsh_replay(), "validate", "--help"]},
        max(reps, 10),
    )
    for name, (walls, _cpus) in timed.items():
        ok = "ok" if min(walls) <= 0.150 else "MISSED"
        verdict = "" if name.startswith("floor") else f"  (<= 0.150 s: {ok})"
        print(f"  {name:36} best {min(walls) * 1000:6.1f} ms  "
              f"median {statistics.median(walls) * 1000:6.1f} ms{verdict}")


def _rss(call: str) -> tuple[int, int, int, float]:
    """Run ``call`` in a fresh interpreter; its baseline and peak RSS (bytes) and wall time.

    Linux carries ru_maxrss over fork+exec, so this runs before the parent grows.
    """
    code = RSS_CHILD.format(root=str(HERE.parent), call=call)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    base, peak, hwm, wall = out.stdout.split()
    return int(base), int(peak), int(hwm), float(wall)


def _report(
    name: str, timed: tuple[list[float], list[float]], size: int, floors: dict[str, list[float]]
) -> None:
    walls, cpus = timed
    best = min(walls)
    ratios = "".join(
        f"  {statistics.median(w / f for w, f in zip(walls, floor, strict=True)):5.2f}x {label}"
        for label, floor in floors.items()
        if floor is not walls
    )
    print(
        f"  {name:31} best {best:6.3f} s  median {statistics.median(walls):6.3f} s  cpu {min(cpus):6.3f} s"
        f"  {size / MB / best:6.1f} MB/s {ratios}"
    )


def _summary(entries: list[Any]) -> list[tuple[Any, ...]]:
    return [(e.call_key, e.entry.chunks, list(e.times or ())) for e in entries]


def check_equivalence(path: Path) -> None:
    """The fast loader must derive exactly what the reference path derives."""
    text = path.read_text(encoding="utf-8")
    reference = derive_replay_script(parse_session_log(text, str(path)), str(path))
    fast = load_log(path).entries
    if _summary(fast) != _summary(reference):
        raise SystemExit(f"MISMATCH: load_log({path}) differs from derive_replay_script(parse_session_log)")
    chunks = sum(len(e.entry.chunks) for e in fast)
    print(f"  equivalence on {path.name}: {len(fast)} calls, {chunks} chunks identical")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=100, help="log size in MB (10^6 bytes)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions per measurement")
    parser.add_argument("--shape", choices=("all", "packed", "packed-v4", "corpus", "v4", "start-up"),
                        default="all", help="which measurements to run")
    parser.add_argument("--before", type=Path, metavar="TREE",
                        help="packed-v4: also time `validate` of the v0 log from this checkout "
                             "(e.g. a `git worktree` of an older commit), in the same rounds")
    args = parser.parse_args()
    if args.shape in ("all", "packed"):
        packed_shape(args)
    if args.shape in ("all", "packed", "packed-v4"):
        packed_generations(args.mb, args.reps, args.before)
    if args.shape in ("all", "corpus"):
        corpus_shape(args.mb, args.reps)
    if args.shape in ("all", "v4"):
        v4_shape(args.mb, args.reps)
    if args.shape in ("all", "start-up"):
        start_up(args.reps)


def packed_shape(args: argparse.Namespace) -> None:
    """The generated log with most delta runs packed (the original measurements)."""

    scenario = DATA / f"scenario-{args.mb}mb-v{GEN_VERSION}"
    log = ensure_log(scenario / "session.jsonl", args.mb * MB)
    small = DATA / f"small-v{GEN_VERSION}.jsonl"
    if not small.is_file():
        write_log(small, 3 * MB, seed=7)
    size = log.stat().st_size

    # RSS first: a child inherits the parent's ru_maxrss, so the parent must still be small.
    print("peak RSS of a fresh process doing only the load")
    rss: dict[str, float] = {}
    calls = {"load_log": f"load_log({str(log)!r})", "load_scenario": f"load_scenario({str(scenario)!r})"}
    for name, call in calls.items():
        base, peak, hwm, wall = _rss(call)
        rss[name] = peak / size
        print(
            f"  {name:32} peak {peak / MB:6.1f} MB = {peak / size:4.2f}x file (VmHWM {hwm / MB:.1f} MB; "
            f"interpreter + imports {base / MB:.1f} MB, the load adds {(peak - base) / size:4.2f}x)  "
            f"wall {wall:.3f} s"
        )

    lines = log.read_bytes().count(b"\n")
    loaded = load_log(log)
    chunks = sum(len(e.entry.chunks) for e in loaded.entries)
    print(
        f"log {log.relative_to(HERE.parent)}: {size / MB:.1f} MB, {lines} lines, {loaded.event_count} events "
        f"(packed rows expanded), {len(loaded.entries)} calls, {chunks} chunks kept"
    )
    del loaded
    gc.collect()

    print("correctness")
    check_equivalence(small)

    print(f"wall time ({args.reps} rounds; ratios are medians of the per-round ratios)")
    timed = _rounds(
        {
            "floor: json.loads per line": lambda: _floor_json(log),
            "floor: msgspec decode per line": lambda: _floor_msgspec(log),
            "load_log": lambda: load_log(log),
            "load_scenario(dir)": lambda: load_scenario(scenario),
        },
        args.reps,
    )
    floors = {
        "json floor": timed["floor: json.loads per line"][0],
        "msgspec floor": timed["floor: msgspec decode per line"][0],
    }
    for name, result in timed.items():
        _report(name, result, size, floors)
    best, cpu = min(timed["load_log"][0]), min(timed["load_log"][1])

    target = size / (100 * MB)
    busy = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} cores, load average {busy} (above ~1 the wall times include waiting)")
    print(
        f"target: {size / MB / best:.0f} MB/s wall, {size / MB / cpu:.0f} MB/s cpu "
        f"(>= 100: {'ok' if best <= target else 'wall MISSED'}{'' if cpu <= target else ', cpu MISSED'}); "
        f"RSS {rss['load_log']:.2f}x file (<= 2.5: {'ok' if rss['load_log'] <= 2.5 else 'MISSED'})"
    )


def packed_generations(mb: int, reps: int, before: Path | None = None) -> None:
    """The packed log beside its v4 rendering (the same calls as settlement events,
    docs/format.md#generations): ``check_log`` in-process and the whole ``dsh-replay validate`` process, each
    against two orjson-per-line processes of its own file (one parsing and dropping each line,
    one reading the values into a list), all interleaved round by round; ``before``: the v0
    ``validate`` of an older checkout in the same rounds."""
    scenario = DATA / f"scenario-{mb}mb-v{GEN_VERSION}"
    log = ensure_log(scenario / "session.jsonl", mb * MB)
    v4_scenario = DATA / f"packed-v4-{mb}mb-v{GEN_VERSION}"
    v4_log = ensure_packed_v4(log, v4_scenario / "session.v4.jsonl")
    logs = {"v0": (scenario, log), "v4": (v4_scenario, v4_log)}
    for tag, (_, path) in logs.items():
        lines = path.read_bytes().count(b"\n")
        print(f"packed shape {tag}: {path.stat().st_size / MB:.1f} MB, {lines} lines, "
              f"{check_log(path).calls} calls")
    print(f"  in-process ({reps} rounds)")
    timed = _rounds({name: fn for tag, (_, path) in logs.items() for name, fn in (
        (f"{tag} floor: orjson.loads per line", lambda path=path: _floor_orjson(path)),
        (f"{tag} check_log", lambda path=path: check_log(path)))}, reps)
    for tag, (_, path) in logs.items():
        floor = {"orjson floor": timed[f"{tag} floor: orjson.loads per line"][0]}
        for name in (f"{tag} floor: orjson.loads per line", f"{tag} check_log"):
            _report("  " + name, timed[name], path.stat().st_size, floor)
    print(f"  whole processes ({reps} rounds; ratio: median of per-round ratios)")
    runs = {name: argv for tag, (directory, path) in logs.items() for name, argv in (
        (f"{tag} floor: orjson-per-line process", [sys.executable, "-c", ORJSON_PROCESS, str(path)]),
        (f"{tag} floor: orjson-per-line read (values kept)",
         [sys.executable, "-c", ORJSON_READ_PROCESS, str(path)]),
        (f"{tag} dsh-replay validate", [*_dsh_replay(), "validate", str(directory)]))}
    if before is not None:
        runs["v0 dsh-replay validate (before)"] = [
            sys.executable, "-c", TREE_VALIDATE, str(before.resolve()), str(scenario)]
    processes = _process_rounds(runs, reps)
    for tag in logs:
        validates = [f"{tag} dsh-replay validate"]
        if before is not None and tag == "v0":
            validates.append("v0 dsh-replay validate (before)")
        for floor, target in ((f"{tag} floor: orjson-per-line process", 1.0),
                              (f"{tag} floor: orjson-per-line read (values kept)", 0.31)):
            print(f"   {tag} against {floor.split(': ', 1)[1]}:")
            _report_processes({name: processes[name] for name in (floor, *validates)}, floor, target)
    walls = [v4 / v0 for v4, v0 in zip(processes["v4 dsh-replay validate"][0],
                                       processes["v0 dsh-replay validate"][0], strict=True)]
    cpus = [v4 / v0 for v4, v0 in zip(processes["v4 dsh-replay validate"][1],
                                      processes["v0 dsh-replay validate"][1], strict=True)]
    print(f"  validate v4 / v0 (median of per-round ratios): wall {statistics.median(walls):.2f}x,"
          f" cpu {statistics.median(cpus):.2f}x (<= 1.0: "
          f"{'ok' if statistics.median(cpus) <= 1.0 else 'MISSED'})")


if __name__ == "__main__":
    main()
