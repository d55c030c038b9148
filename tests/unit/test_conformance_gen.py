"""Every scenario of the generations corpus (log formats v2 to v7, docs/format.md#generations) loads to
exactly its expected output; ``validate`` agrees with loading; every generation a directory keeps of
one role derives the same calls."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from replay_engine import DerivationError, ReplayError, load_scenario
from replay_engine.scenario.check import check_scenario
from replay_engine.scenario.derive_fast import load_log
from replay_engine.scenario.layout import log_name
from tests.conftest import conformance_gen_dir
from tests.unit.test_conformance import first_difference

CORPUS = conformance_gen_dir()
REQUIRED = os.environ.get("DSH_REPLAY_REQUIRE_CONFORMANCE") == "1"


def _manifest() -> list[dict[str, Any]]:
    if CORPUS is None:
        return []
    found: list[dict[str, Any]] = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))
    return found


def _names() -> list[str]:
    return sorted(entry["name"] for entry in _manifest())


def _expected(name: str) -> dict[str, Any]:
    assert CORPUS is not None
    expected: dict[str, Any] = json.loads((CORPUS / "expected" / f"{name}.json").read_text(
        encoding="utf-8"))
    expected.pop("scenario", None)
    return expected


def test_corpus_present() -> None:
    if CORPUS is None:
        if REQUIRED:
            pytest.fail("DSH_REPLAY_REQUIRE_CONFORMANCE=1 but ../shared/conformance-gen is absent")
        pytest.skip("generations corpus absent; set DSH_REPLAY_CONFORMANCE_GEN_DIR")
    on_disk = sorted(p.name for p in (CORPUS / "scenarios").iterdir() if p.is_dir())
    assert on_disk == _names() and len(on_disk) == 57


@pytest.mark.conformance
@pytest.mark.parametrize("name", _names())
def test_scenario_matches_expected(name: str) -> None:
    assert CORPUS is not None
    expected = _expected(name)
    scenario_dir = CORPUS / "scenarios" / name
    problems, _ = check_scenario(str(scenario_dir))
    if expected["ok"]:
        assert expected.keys() == {"ok", "scripts", "headers"}
        got = load_scenario(scenario_dir).to_json()
        difference = first_difference(got, expected)
        assert difference is None, f"{name}: first difference at {difference}"
        assert problems == []
        return
    with pytest.raises(ReplayError) as caught:
        load_scenario(scenario_dir)
    assert problems, "validate must fail where loading fails"
    key = re.search(r"model call (\S+) ended without a finish", expected["error"])
    if key is not None:  # an unfinished call: named by its key, and the sidecar that fixes it
        assert isinstance(caught.value, DerivationError)
        assert caught.value.call_key == key.group(1)
        assert f"model call {key.group(1)} " in caught.value.message
        assert "replay.override.json" in caught.value.message
        assert any(f"model call {key.group(1)} " in p for p in problems)


def _multi_generation() -> list[str]:
    return sorted(e["name"] for e in _manifest() if "multi-generation" in e["features"])


def test_the_corpus_has_multi_generation_directories() -> None:
    if CORPUS is None:
        pytest.skip("generations corpus absent")
    assert len(_multi_generation()) == 11


@pytest.mark.conformance
@pytest.mark.parametrize("name", _multi_generation())
def test_every_generation_of_a_role_derives_the_same_calls(name: str) -> None:
    """A refreshed scenario keeps its older generations: each derives what the newest does."""
    assert CORPUS is not None
    roles: dict[int | None, list[Path]] = {}
    for path in (CORPUS / "scenarios" / name).iterdir():
        found = log_name(path.name)
        if found is not None:
            roles.setdefault(found.ordinal, []).append(path)
    compared = 0
    for ordinal, paths in roles.items():
        derived = [[e.entry.chunks for e in load_log(p, seed_length=ordinal is not None).entries]  # type: ignore[union-attr]
                   for p in paths]
        for other in derived[1:]:
            assert other == derived[0], f"{name}: {[p.name for p in paths]} differ"
            compared += 1
    assert compared >= 1
