"""Benchmark: checking a broken sidecar as text, as the editor's raw mode does after each pause
in typing.

Run by hand: ``python3 benchmarks/raw_sidecar.py [--patches 2000] [--chunks 20] [--reps 5]``.

Builds a patches sidecar in memory (one chunks entry per patch) and measures the best CPU time
of ``RawSidecar.problems`` on it: valid, with one problem near its end, and with every entry
invalid (each problem then located at its line and column). The baseline, measured in the same
run, is ``json.loads`` of the same text; every figure is also printed as a multiple of it. The
editor checks a text in a thread once it is longer than ``LARGE_TEXT`` (printed too), so typing
never waits for a check of a text that takes longer than a frame.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dsh_replay_tui.widgets.raw_sidecar import LARGE_TEXT  # noqa: E402

from replay_engine.authoring.raw import RawSidecar  # noqa: E402


def sidecar_text(patches: int, chunks: int, *, broken: str | None = None) -> str:
    """``patches`` chunks entries; ``broken``: ``last`` (one bad chunk type at the end) or
    ``all`` (every entry gets an unknown key)."""
    body = [{"type": "text-delta", "index": 0, "text": f"word{k} "} for k in range(chunks - 2)]
    entries = []
    for at in range(patches):
        entry: dict[str, object] = {"kind": "chunks", "chunks": [
            {"type": "block-start", "index": 0, "blockType": "text"}, *body,
            {"type": "finish", "reason": {"kind": "stop"}}]}
        if broken == "all" or (broken == "last" and at == patches - 1):
            entry["note"] = "not a key of an entry"
        entries.append({"at": at, "entry": entry})
    return json.dumps({"patches": entries}, indent=2) + "\n"


def best_cpu_ms(fn: Callable[[], object], reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        start = time.process_time()
        fn()
        best = min(best, (time.process_time() - start) * 1000)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--patches", type=int, default=2000)
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    raw = RawSidecar(Path("/nonexistent/replay.override.json"), "", None, args.patches)
    texts = {kind: sidecar_text(args.patches, args.chunks, broken=kind)
             for kind in (None, "last", "all")}
    valid = texts[None]
    baseline = best_cpu_ms(lambda: json.loads(valid), args.reps)
    print(f"{args.patches} patches x {args.chunks} chunks: {len(valid) / 1e6:.1f} MB of text "
          f"(checked in a thread past {LARGE_TEXT // 1024} KiB)")
    print(f"  json.loads             : {baseline:8.1f} ms (baseline)")
    for kind, label in ((None, "valid"), ("last", "one problem"), ("all", "every entry bad")):
        problems = raw.problems(texts[kind])
        ms = best_cpu_ms(lambda kind=kind: raw.problems(texts[kind]), args.reps)
        print(f"  {label:<16} {len(problems):>6} : {ms:8.1f} ms ({ms / baseline:.1f}x baseline)")


if __name__ == "__main__":
    main()
