"""Every recorded conformance scenario loads to exactly the reference's derived output."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from replay_engine import DerivationError, ReplayError, load_scenario
from tests.conftest import conformance_dir

CORPUS = conformance_dir()
REQUIRED = os.environ.get("DSH_REPLAY_REQUIRE_CONFORMANCE") == "1"


def _names() -> list[str]:
    if CORPUS is None:
        return []
    return sorted(p.name for p in (CORPUS / "scenarios").iterdir() if p.is_dir())


def test_corpus_present() -> None:
    if CORPUS is None:
        if REQUIRED:
            pytest.fail("DSH_REPLAY_REQUIRE_CONFORMANCE=1 but ../shared/conformance is absent")
        pytest.skip("conformance corpus absent (plain clone); set DSH_REPLAY_CONFORMANCE_DIR")
    assert len(_names()) == 121


@pytest.mark.conformance
@pytest.mark.parametrize("name", _names())
def test_scenario_matches_reference(name: str) -> None:
    assert CORPUS is not None
    expected = json.loads((CORPUS / "expected" / f"{name}.json").read_text(encoding="utf-8"))
    expected.pop("scenario", None)
    scenario_dir: Path = CORPUS / "scenarios" / name
    if expected["ok"]:
        assert load_scenario(scenario_dir).to_json() == expected
    else:
        key = re.search(r"model call (\S+)", expected["error"])
        assert key is not None
        with pytest.raises(ReplayError) as caught:
            load_scenario(scenario_dir)
        assert isinstance(caught.value, DerivationError)
        assert caught.value.call_key == key.group(1)
        assert f"model call {key.group(1)} " in caught.value.message
        assert "replay.override.json" in caught.value.message
