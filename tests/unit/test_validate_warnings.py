"""``dsh-replay validate`` warns (exit status unchanged) where a newer harness is stricter than
the scenario format: a line that is not an object, an event whose present seq/time is not a number.

Run as a real process (``python -m replay_engine.cli``, the process entry that exits without
freeing), so the output checked is what a user sees on a pipe.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAD = '{"type":"session","id":"s","createdAt":1}'
FINISH = '{"type":"assistant/chunk","seq":%s,"time":%s,"data":{"turn":1,"step":1,"chunk":{"type":"finish"}}}'


def chunk(seq: str = "1", time: str = "2") -> str:
    return FINISH % (seq, time)


def scenario(root: Path, name: str, **logs: list[str]) -> Path:
    path = root / name
    path.mkdir()
    for file, lines in logs.items():
        (path / file.replace("_", ".")).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def validate(*paths: Path) -> tuple[int, list[str]]:
    result = subprocess.run([sys.executable, "-m", "replay_engine.cli", "validate", *map(str, paths)],
                            cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert result.stderr == ""
    return result.returncode, result.stdout.splitlines()


def test_non_object_lines_and_odd_envelopes_warn(tmp_path: Path) -> None:
    path = scenario(tmp_path, "s", session_jsonl=[
        HEAD, "5", '"text"', "[1, 2]", "true", chunk('"7"'), chunk("1", "null"), chunk("{}", "[]"),
        '{"type":"user/message","seq":false,"data":{"content":"x"}}',
    ])
    log = path / "session.jsonl"
    code, out = validate(path)
    assert code == 0
    assert out == [
        f"ok   {path} (9 warning(s))",
        f"  warning: {log}:2: the line is the number 5, not a JSON object; it is ignored like an unknown "
        "event, but newer harness versions refuse such a log. Remove the line.",
        f"  warning: {log}:3: the line is a string, not a JSON object; it is ignored like an unknown "
        "event, but newer harness versions refuse such a log. Remove the line.",
        f"  warning: {log}:4: the line is a list, not a JSON object; it is ignored like an unknown "
        "event, but newer harness versions refuse such a log. Remove the line.",
        f"  warning: {log}:5: the line is a boolean, not a JSON object; it is ignored like an unknown "
        "event, but newer harness versions refuse such a log. Remove the line.",
        f"  warning: {log}:6: the event's seq is a string, not a number; it is kept as given, but "
        "newer harness versions refuse such a log. Make seq a number or remove it.",
        f"  warning: {log}:7: the event's time is null, not a number; it is kept as given, but "
        "newer harness versions refuse such a log. Make time a number or remove it.",
        f"  warning: {log}:8: the event's seq is an object, not a number; it is kept as given, but "
        "newer harness versions refuse such a log. Make seq a number or remove it.",
        f"  warning: {log}:8: the event's time is a list, not a number; it is kept as given, but "
        "newer harness versions refuse such a log. Make time a number or remove it.",
        f"  warning: {log}:9: the event's seq is a boolean, not a number; it is kept as given, but "
        "newer harness versions refuse such a log. Make seq a number or remove it.",
    ]


def test_numbers_and_projected_envelopes_do_not_warn(tmp_path: Path) -> None:
    path = scenario(tmp_path, "s", session_jsonl=[
        HEAD, chunk("1.5", "-2"), chunk("123456789012345678901234567890", "1e300"), chunk("0", "0.25"),
        '{"type":"assistant/chunk","data":{"turn":1,"step":2,"chunk":{"type":"finish"}}}',
        '{"type":"text-chunks","data":{"turn":1,"step":3,"index":0,"dt":[],"texts":["a"]}}',
        chunk("3", "4").replace('"step":1', '"step":3'), "{}", "",
    ])
    assert validate(path) == (0, [f"ok   {path}"])


def test_warnings_beside_an_error_keep_the_error_status(tmp_path: Path) -> None:
    path = scenario(tmp_path, "s", session_jsonl=[HEAD, "[]", '{"type":"x"', chunk()])
    code, out = validate(path)
    log = path / "session.jsonl"
    assert code == 1
    assert out[0] == f"FAIL {path}: 1 problem(s)"
    assert out[1].startswith(f"  - {log}:3: not valid JSON")
    assert out[2].startswith(f"  warning: {log}:2: the line is a list, not a JSON object")
    assert len(out) == 3


def test_child_logs_and_a_non_object_header_warn(tmp_path: Path) -> None:
    seeded = json.dumps({"type": "session", "id": "c", "createdAt": 2, "seedLength": 1})
    path = scenario(tmp_path, "s", session_jsonl=["[]", chunk()],
                    session_1_jsonl=[seeded, chunk('"x"'), chunk()])
    code, out = validate(path)
    assert code == 0
    assert out[0] == f"ok   {path} (2 warning(s))"
    assert out[1].startswith(f"  warning: {path / 'session.jsonl'}:1: the line is a list, not a JSON object")
    # Before the child's seed too: a newer harness reads every line of the file.
    assert out[2].startswith(f"  warning: {path / 'session.1.jsonl'}:2: the event's seq is a string")


def test_every_scenario_is_reported(tmp_path: Path) -> None:
    # The process leaves without freeing: its output must still be complete on a pipe.
    paths = [scenario(tmp_path, f"s{i}", session_jsonl=[HEAD, chunk(), *(["7"] * (i % 3))])
             for i in range(30)]
    code, out = validate(*paths)
    assert code == 0
    assert [line for line in out if not line.startswith("  ")] == [
        f"ok   {p}" + (f" ({i % 3} warning(s))" if i % 3 else "") for i, p in enumerate(paths)]
    assert len(out) == 30 + sum(i % 3 for i in range(30))
