"""``check_log`` (what ``dsh-replay validate`` runs) finds exactly what ``load_log`` finds.

The checker keeps no chunk: every case runs both on the same bytes and compares the number of
calls, or the error word for word (class, code, line, call key). The scenario-level check is
compared with the same check done by loading (the samples, the conformance corpus).
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay_engine import ReplayError
from replay_engine.scenario.check import check_scenario, validate_scenario
from replay_engine.scenario.derive_fast import derive_log_bytes, load_log
from replay_engine.scenario.loading import config_from_directory, load_child_log, log_present, read_header
from replay_engine.scenario.logcheck import check_log, check_log_bytes
from replay_engine.scenario.sidecar import load_sidecar, sidecar_is_bare_list
from tests.conftest import SAMPLES, conformance_dir
from tests.unit.test_derive_fastpath import ERROR_CASES, OK_CASES, SEED_LOG, _random_log, head
from tests.unit.test_properties import pack, plain, sessions

FILE = "f.jsonl"


def outcome(run: Any) -> tuple[Any, ...]:
    """("ok", number of calls) or the error as the user sees it."""
    try:
        return ("ok", run())
    except ReplayError as exc:
        return (type(exc).__name__, exc.code, exc.message, exc.line, getattr(exc, "call_key", None))


def loaded(data: bytes, seeded: bool) -> tuple[Any, ...]:
    return outcome(lambda: len(derive_log_bytes(data, FILE, seed_length=seeded).entries))


def checked(data: bytes, seeded: bool) -> tuple[Any, ...]:
    return outcome(lambda: check_log_bytes(data, FILE, seed_length=seeded).calls)


def same(data: bytes, seeded: bool = False) -> tuple[Any, ...]:
    got = checked(data, seeded)
    assert got == loaded(data, seeded)
    return got


def _bytes(lines: list[str], newline: str = "\n") -> bytes:
    return (newline.join(lines) + newline).encode("utf-8")


@pytest.mark.parametrize("name", sorted(OK_CASES))
@pytest.mark.parametrize("seeded", [False, True])
def test_ok_cases(name: str, seeded: bool) -> None:
    got = same(_bytes(OK_CASES[name]), seeded)
    assert got[0] == "ok"


@pytest.mark.parametrize("name", sorted(ERROR_CASES))
def test_error_cases(name: str) -> None:
    got = same(_bytes(ERROR_CASES[name][0]))
    assert got[0] != "ok"


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 5, 8, 11, 13, 2.7, -0.5, -1, -3, -6, -9, -13, -100, 100,
                                  1e300, "x", None])
def test_seed_length(seed: Any) -> None:
    same(_bytes([head(seed)] + SEED_LOG[1:]), seeded=True)


@pytest.mark.parametrize("seed", [None, 3, -2])
def test_unfinished_call_before_and_after_the_seed(seed: Any) -> None:
    lines = [head(seed), '{"type":"assistant/chunk","data":{"turn":1,"step":1,"chunk":{}}}',
             '{"type":"x"}', '{"type":"assistant/chunk","data":{"turn":2,"step":1,"chunk":{}}}',
             '{"type":"assistant/chunk","data":{"turn":2,"step":1,"chunk":{"type":"finish"}}}']
    for seeded in (False, True):
        same(_bytes(lines), seeded)


@pytest.mark.parametrize("seed", range(40))
def test_random_logs(seed: int) -> None:
    rng = random.Random(seed)
    same(_bytes(_random_log(rng), rng.choice(["\n", "\r\n"])), seeded=rng.random() < 0.5)


def test_from_a_file_as_in_memory(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    for lines, _ in ERROR_CASES.values():
        path.write_bytes(_bytes(lines))
        from_file = outcome(lambda: check_log(path, name=FILE).calls)
        assert from_file == checked(path.read_bytes(), False)
        assert from_file == outcome(lambda: len(load_log(path, name=FILE).entries))


# --- generated logs, broken here and there -----------------------------------------------

BROKEN_LINES = [
    b"null", b"5", b'"s"', b"[1]", b"true", b"{", b"{} {}", b'{"type":"x","time":NaN}',
    b'{"type":"x","data":"\xff"}', b'{"type":"x","data":{"a":"\xff"}}', b'{"type":"x","z":1e999}',
    b'{"type":"assistant/chunk","data":{"turn":1,"step":1,"chunk":"\xff"}}',
    b'{"type":"assistant/chunk","data":{"turn":1,"step":1,"chunk":{"t":1e999}}}',
    b'{"type":"assistant/chunk","data":{"turn":1,"step":1}}',
    b'{"type":"assistant/chunk","seq":"x","data":{"turn":1,"step":1,"chunk":{"type":"finish"}}}',
    b'{"type":"assistant/chunk","time":null,"data":{"turn":1,"step":1,"chunk":{"type":"finish"}}}',
    b'{"type":"x","seq":[1],"time":{"a":"\xff"}}', b'{"type":"x","seq":"\xff"}',
    b'{"type":"x","data":[1],"seq":true}',
    b'{"type":"text-chunks","seq0":"x","data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["a"]}}',
    b'{"type":"text-chunks","data":{"turn":1,"step":1,"index":0,"dt":[1],"texts":["a"]}}',
    b'{"type":"text-chunks","seq":1,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["a"]}}',
    b'{"type":"text-chunks","data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["\xff"]}}',
    b'{"type":"compaction/summary","data":{"llmStreamCall":true}}',
    b'{"type":"compaction/summary","data":{"llmStreamCall":true,"rawOutput":[null]}}',
    b'{"type":"compaction/summary","seq":"1","data":{"llmStreamCall":true,"rawOutput":[]}}',
    b"\xc2\xa0", b"\xef\xbb\xbf{}",
]


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(sessions(), st.data(), st.booleans())
def test_generated_logs_with_broken_lines(session: tuple[dict[str, Any], list[Any]], draw: st.DataObject,
                                          seeded: bool) -> None:
    head_line, events = session
    if draw.draw(st.booleans()):
        events = pack(events, draw)
    lines = plain(head_line, events).encode("utf-8").split(b"\n")
    for _ in range(draw.draw(st.integers(0, 3))):
        at = draw.draw(st.integers(1, len(lines)))
        lines.insert(at, draw.draw(st.sampled_from(BROKEN_LINES)))
    same(b"\n".join(lines), seeded)


# --- whole scenarios: validate's problems are what loading each file reports -----------------


def problems_by_loading(path: Path) -> list[str]:
    """Validation as it is done by loading every file (the chunks kept)."""
    config = config_from_directory(path)
    problems: list[str] = []
    sidecar = Path(config.overrideFile or "")
    has_sidecar = sidecar.is_file()
    replaces = has_sidecar and sidecar_is_bare_list(sidecar)
    primary = Path(config.file or "")
    derived: int | None = None
    if log_present(primary):
        try:
            if replaces:
                read_header(primary)
            else:
                derived = len(load_log(primary).entries)
        except ReplayError as exc:
            problems.append(exc.message)
    for child in config.childFiles:
        try:
            load_child_log(Path(child))
        except ReplayError as exc:
            problems.append(exc.message)
    if has_sidecar:
        try:
            load_sidecar(sidecar, derived_length=derived)
        except ReplayError as exc:
            problems.append(exc.message)
    if not log_present(primary) and not replaces:
        problems.append(f"{primary}: the primary session log is missing; record the scenario "
                        "(session.jsonl) or supply a bare-list replay.override.json that replaces "
                        "its script.")
    return problems


SAMPLE_DIRS = sorted(p for p in SAMPLES.iterdir() if p.is_dir())


@pytest.mark.parametrize("path", SAMPLE_DIRS, ids=[p.name for p in SAMPLE_DIRS])
def test_sample_scenarios(path: Path) -> None:
    assert validate_scenario(str(path)) == problems_by_loading(path)
    if path.name.startswith("broken-"):
        assert validate_scenario(str(path))


def test_scenario_edge_cases(tmp_path: Path) -> None:
    ok = _bytes([head(), '{"type":"assistant/chunk","data":{"turn":1,"step":1,"chunk":{"type":"finish"}}}'])
    unfinished = _bytes([head(), '{"type":"assistant/chunk","data":{"turn":1,"step":1,"chunk":{}}}'])
    cases: dict[str, dict[str, bytes | None]] = {
        "no primary": {},
        "no primary, bare list": {"replay.override.json": b"[]"},
        "unfinished child": {"session.jsonl": ok, "session.1.jsonl": unfinished},
        "child is a directory": {"session.jsonl": ok, "session.2.jsonl": None},
        "patch past the end": {"session.jsonl": ok,
                               "replay.override.json": b'{"patches":[{"at":5,"entry":{"kind":"hang"}}]}'},
        "unfinished primary, bare list": {"session.jsonl": unfinished,
                                          "replay.override.json": b'[{"kind":"hang"}]'},
    }
    for name, files in cases.items():
        root = tmp_path / name.replace(" ", "-").replace(",", "")
        root.mkdir()
        for file, content in files.items():
            if content is None:
                (root / file).mkdir()
            else:
                (root / file).write_bytes(content)
        assert validate_scenario(str(root)) == problems_by_loading(root), name
    assert validate_scenario(str(tmp_path / "absent")) == [
        f"{tmp_path / 'absent'}: no such scenario directory; pass a directory holding session.jsonl."]


CORPUS = conformance_dir()
CORPUS_DIRS = sorted(p for p in (CORPUS / "scenarios").iterdir() if p.is_dir()) if CORPUS else []


@pytest.mark.skipif(CORPUS is None, reason="conformance corpus absent")
def test_conformance_corpus() -> None:
    # Every scenario at once (366): each file checked and loaded, the problems compared.
    differing = [p.name for p in CORPUS_DIRS if validate_scenario(str(p)) != problems_by_loading(p)]
    assert differing == []
    assert len(CORPUS_DIRS) == 366


@pytest.mark.skipif(CORPUS is None, reason="conformance corpus absent")
def test_conformance_logs_count_the_same_calls() -> None:
    for scenario in CORPUS_DIRS:
        for log in sorted(scenario.glob("session*.jsonl")):
            if not log.is_file():
                continue
            for seeded in (False, True):
                data = log.read_bytes()
                assert checked(data, seeded) == loaded(data, seeded), (log, seeded)


def test_the_check_imports_no_models(tmp_path: Path) -> None:
    # validate on a scenario without a sidecar never needs pydantic (start-up time).
    root = tmp_path / "s"
    root.mkdir()
    (root / "session.jsonl").write_bytes(_bytes([head(), '{"type":"x"}']))
    code = ("import sys\nfrom replay_engine.scenario.check import check_scenario\n"
            f"print(check_scenario({str(root)!r}))\n"
            "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'replay_engine.models'))))")
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert out.stdout.splitlines() == ["([], [])", "[]"]


def test_check_scenario_returns_warnings(tmp_path: Path) -> None:
    root = tmp_path / "s"
    root.mkdir()
    (root / "session.jsonl").write_bytes(_bytes([head(), "[1]"]))
    problems, warnings = check_scenario(str(root))
    assert problems == [] and len(warnings) == 1
    assert warnings[0].startswith(f"{root / 'session.jsonl'}:2: the line is a list, not a JSON object")
