"""Benchmark: the override editor's work per keystroke on a large primary script.

Run by hand: ``python3 benchmarks/override_preview.py [--calls 2000] [--chunks 50]``.
Measures, for one valid edit of the entry JSON: parsing and validating the
entry, the draft comparison, and the preview text of both sides plus the
differences. The baseline, measured in the same run, is rendering the preview
with no summary cache (every call summarised again). Target: the whole
keystroke well under 100 ms for 2000 calls of 50 chunks on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dsh_replay_tui.widgets.override_preview import Summaries, diff_text, script_text  # noqa: E402

from replay_engine.authoring.draft import OverrideDraft, parse_entry_text  # noqa: E402
from replay_engine.models import ChunksEntry, ScriptEntry  # noqa: E402


def build(calls: int, chunks: int) -> OverrideDraft:
    derived = []
    for i in range(calls):
        body = [{"type": "text-delta", "index": 0, "text": f"word{k} "} for k in range(chunks - 2)]
        entry = ChunksEntry.model_construct(kind="chunks", chunks=[
            {"type": "block-start", "index": 0, "blockType": "text"}, *body,
            {"type": "finish", "reason": {"kind": "stop"}}])
        derived.append(ScriptEntry(entry=entry, origin="derived", call_key=f"{i + 1}/1"))
    return OverrideDraft(Path("/nonexistent/replay.override.json"), "patches", derived)


def best_ms(fn: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--chunks", type=int, default=50)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    draft = build(args.calls, args.chunks)
    target = args.calls // 2
    text = json.dumps(draft.effective()[target].to_json(), indent=2)
    text = text.replace("word3 ", "edited ")
    cache: Summaries = {}

    def keystroke(summaries: Summaries | None) -> None:
        draft.put(target, parse_entry_text(text))
        rows = draft.compare()
        script_text(rows, "derived", target, summaries)
        script_text(rows, "effective", target, summaries)
        diff_text(rows)

    baseline = best_ms(lambda: keystroke(None), args.reps)
    keystroke(cache)  # fill the cache, as the first redraw of the screen does
    cached = best_ms(lambda: keystroke(cache), args.reps)
    parse = best_ms(lambda: parse_entry_text(text), args.reps)
    compare = best_ms(draft.compare, args.reps)
    print(f"{args.calls} calls x {args.chunks} chunks")
    print(f"  parse+validate entry : {parse:8.2f} ms")
    print(f"  compare              : {compare:8.2f} ms")
    print(f"  keystroke, no cache  : {baseline:8.2f} ms (baseline)")
    print(f"  keystroke, cached    : {cached:8.2f} ms ({cached / baseline:.2f}x baseline)")


if __name__ == "__main__":
    main()
