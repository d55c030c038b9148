"""Benchmark: ``dsh-replay override`` and sidecar validation on a sidecar of many patches.

Run by hand: ``python3 benchmarks/sidecar.py [--patches 100000] [--reps 3]``.

Generates (in ``benchmarks/_data/``) a scenario whose primary log has N calls and whose
sidecar patches every one of them (a throw entry each), plus the same sidecar with every
entry invalid, and an entry file of N chunks that are not objects. Measures the best CPU
time of the reps (CPU, not wall: the machine may be shared) of validating the sidecar, the
whole ``override --at K --hang`` command in this process (load, draft, edit, save, report;
stdout discarded), and the errors of the invalid sidecar and of the invalid entry file.
The baseline, measured in the same run, is ``json.loads`` of the sidecar text; every
figure is also printed as a multiple of it. Run it with two sizes to see that the ratios
stay flat (linear work).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from replay_engine.authoring.draft import parse_entry_text  # noqa: E402
from replay_engine.cli.dispatch import main as cli_main  # noqa: E402
from replay_engine.errors import SidecarError  # noqa: E402
from replay_engine.scenario.sidecar import load_sidecar  # noqa: E402

DATA = Path(__file__).resolve().parent / "_data"
VERSION = 1
"""Bumped whenever the generated files change, so stale ones are not reused."""
THROW = {"kind": "throw", "chunks": [], "message": "rate limited", "code": "RATE_LIMIT"}


def _log(path: Path, calls: int) -> None:
    chunks = ({"type": "block-start", "index": 0, "blockType": "text"},
              {"type": "text-delta", "index": 0, "text": "hello"},
              {"type": "finish", "reason": {"kind": "stop"}})
    seq = 0
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps({"type": "session", "id": "bench", "createdAt": 1000}) + "\n")
        for turn in range(1, calls + 1):
            for chunk in chunks:
                out.write(json.dumps({"type": "assistant/chunk", "seq": seq, "time": seq,
                                      "data": {"turn": turn, "step": 1, "chunk": chunk}},
                                     separators=(",", ":")) + "\n")
                seq += 1


def generate(patches: int) -> Path:
    """The scenario directory for ``patches`` calls (reused when already generated)."""
    root = DATA / f"sidecar-v{VERSION}-{patches}"
    if (root / "done").is_file():
        return root
    shutil.rmtree(root, ignore_errors=True)
    (root / "scenario").mkdir(parents=True)
    _log(root / "scenario" / "session.jsonl", patches)
    valid = {"patches": [{"at": i, "entry": THROW} for i in range(patches)]}
    text = json.dumps(valid, indent=2) + "\n"
    (root / "valid.json").write_text(text, encoding="utf-8")
    invalid = {"patches": [{"at": i, "entry": {**THROW, "code": None}} for i in range(patches)]}
    (root / "invalid.json").write_text(json.dumps(invalid, indent=2) + "\n", encoding="utf-8")
    (root / "bad-chunks.json").write_text(json.dumps([7] * patches), encoding="utf-8")
    (root / "done").write_text("")
    return root


def best_s(fn: Callable[[], object], reps: int, before: Callable[[], object] | None = None) -> float:
    """Best CPU time of ``reps`` runs (CPU, not wall: the machine may be shared)."""
    times = []
    for _ in range(reps):
        if before is not None:
            before()
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--patches", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    root = generate(args.patches)
    scenario = root / "scenario"
    sidecar = scenario / "replay.override.json"
    valid = root / "valid.json"
    text = valid.read_text(encoding="utf-8")

    def reset() -> None:
        shutil.copyfile(valid, sidecar)
        for stale in (sidecar.with_name(sidecar.name + ".bak"),):
            stale.unlink(missing_ok=True)

    def override() -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            code = cli_main(["override", str(scenario), "--at", str(args.patches // 2), "--hang"])
        assert code == 0

    def invalid() -> int:
        try:
            load_sidecar(root / "invalid.json", derived_length=args.patches)
        except SidecarError as exc:
            return len(exc.message.encode())
        raise AssertionError("the invalid sidecar loaded")

    bad_chunks = (root / "bad-chunks.json").read_text(encoding="utf-8")

    def entry_text() -> int:
        try:
            parse_entry_text(bad_chunks, "bad-chunks.json")
        except SidecarError as exc:
            return len(exc.message.encode())
        raise AssertionError("the invalid entry parsed")

    baseline = best_s(lambda: json.loads(text), args.reps)
    rows = [
        ("load_sidecar (parse + validate)",
         best_s(lambda: load_sidecar(valid, derived_length=args.patches), args.reps)),
        ("override --at K --hang (whole command)", best_s(override, args.reps, reset)),
        ("invalid sidecar -> error", best_s(invalid, args.reps)),
        ("entry of N bad chunks -> error", best_s(entry_text, args.reps)),
    ]
    print(f"{args.patches} patches, sidecar {len(text.encode()) / 1e6:.1f} MB, "
          f"log {(scenario / 'session.jsonl').stat().st_size / 1e6:.1f} MB")
    print(f"  {'json.loads of the sidecar (baseline)':40} {baseline:8.3f} s     1.0x")
    for name, seconds in rows:
        print(f"  {name:40} {seconds:8.3f} s {seconds / baseline:8.1f}x")
    print(f"  error message sizes: invalid sidecar {invalid()} bytes, "
          f"bad entry {entry_text()} bytes")


if __name__ == "__main__":
    main()
