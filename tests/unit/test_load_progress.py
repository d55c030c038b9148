"""``load_scenario(progress=...)``: the primary's calls reported block by block while the log is
read, and a result identical to the plain load (the blocks split lines as the file does)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay_engine import DerivationError, LoadProgress, load_scenario
from replay_engine.scenario.derive_fast import PROGRESS_BLOCK


def write_log(path: Path, calls: int, *, newline_at_end: bool = True,
              broken_at: int | None = None) -> None:
    """``calls`` two-chunk calls, text sized so that block boundaries fall mid-line."""
    lines = [json.dumps({"type": "session", "version": 0, "id": "p", "createdAt": 5})]
    for i in range(calls):
        data = {"turn": i + 1, "step": 1}
        text = f"call {i} " + "y" * (300 + i % 97)
        first = {"type": "text-delta", "index": 0, "text": text} if i != broken_at else 7
        for n, chunk in enumerate((first, {"type": "finish", "reason": {"kind": "stop"}})):
            lines.append(json.dumps({"type": "assistant/chunk", "seq": 2 * i + n, "time": i,
                                     "data": {**data, "chunk": chunk}}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + ("\n" if newline_at_end else ""), encoding="utf-8")


@pytest.mark.parametrize("newline_at_end", [True, False])
def test_progress_reports_a_growing_prefix_and_the_same_scenario(
        tmp_path: Path, newline_at_end: bool) -> None:
    root = tmp_path / "s"
    write_log(root / "session.jsonl", 9000, newline_at_end=newline_at_end)
    size = (root / "session.jsonl").stat().st_size
    assert size > 2 * PROGRESS_BLOCK // 4
    reports: list[LoadProgress] = []
    told = load_scenario(root, progress=reports.append)
    plain = load_scenario(root)
    assert told.scripts == plain.scripts and told.headers == plain.headers
    assert told.derived_primary == plain.derived_primary
    assert len(reports) >= 2
    assert [r.done for r in reports] == sorted(r.done for r in reports)
    assert reports[-1].done == reports[-1].total == size
    assert reports[0].describe().startswith("loading… 1 MB of ")
    final = told.scripts[0].entries
    for report in reports:
        assert report.primary.primary and report.primary.recorded_id == "p"
        assert report.primary.entries == final[:len(report.primary.entries)]
    assert 0 < len(reports[0].primary.entries) < len(final)


def test_an_error_after_progress_is_the_plain_load_error(tmp_path: Path) -> None:
    root = tmp_path / "s"
    write_log(root / "session.jsonl", 9000, broken_at=8990)
    reports: list[LoadProgress] = []
    with pytest.raises(DerivationError) as told:
        load_scenario(root, progress=reports.append)
    with pytest.raises(DerivationError) as plain:
        load_scenario(root)
    assert reports and str(told.value) == str(plain.value)


def test_a_log_read_in_one_block_is_not_reported(tmp_path: Path) -> None:
    root = tmp_path / "s"
    write_log(root / "session.jsonl", 20)
    reports: list[LoadProgress] = []
    assert load_scenario(root, progress=reports.append).scripts == load_scenario(root).scripts
    assert reports == []
