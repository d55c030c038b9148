"""Every recorded conformance scenario loads to exactly the reference's derived output."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

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
    manifest = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))
    assert len(_names()) == 121 + len(manifest) == 366


def first_difference(got: Any, want: Any, where: str = "$") -> str | None:
    """The JSON location where two parsed documents first differ (numbers compare by value)."""
    if isinstance(want, dict) and isinstance(got, dict):
        for key in list(want) + [k for k in got if k not in want]:
            if key not in got:
                return f"{where}.{key}: missing (want {want[key]!r:.200})"
            if key not in want:
                return f"{where}.{key}: unexpected (got {got[key]!r:.200})"
            found = first_difference(got[key], want[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(want, list) and isinstance(got, list):
        for i, (a, b) in enumerate(zip(got, want, strict=False)):
            found = first_difference(a, b, f"{where}[{i}]")
            if found:
                return found
        if len(got) != len(want):
            return f"{where}: {len(got)} item(s), want {len(want)}"
        return None
    same = got == want and isinstance(got, bool) == isinstance(want, bool)
    return None if same else f"{where}: got {got!r:.200}, want {want!r:.200}"


def test_first_difference_names_the_location() -> None:
    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1.0, {"b": 2}]}) is None
    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}) == "$.a[1].b: got 2, want 3"
    assert first_difference({"a": 1}, {"a": 1, "h": {}}) == "$.h: missing (want {})"
    assert first_difference([1], [1, 2]) == "$: 1 item(s), want 2"
    assert first_difference(True, 1) == "$: got True, want 1"


@pytest.mark.conformance
@pytest.mark.parametrize("name", _names())
def test_scenario_matches_reference(name: str) -> None:
    assert CORPUS is not None
    expected = json.loads((CORPUS / "expected" / f"{name}.json").read_text(encoding="utf-8"))
    expected.pop("scenario", None)
    scenario_dir: Path = CORPUS / "scenarios" / name
    if expected["ok"]:
        assert expected.keys() == {"ok", "scripts", "headers"}
        got = load_scenario(scenario_dir).to_json()
        difference = first_difference(got, expected)
        assert difference is None, f"{name}: first difference at {difference}"
    else:
        key = re.search(r"model call (\S+)", expected["error"])
        assert key is not None
        with pytest.raises(ReplayError) as caught:
            load_scenario(scenario_dir)
        assert isinstance(caught.value, DerivationError)
        assert caught.value.call_key == key.group(1)
        assert f"model call {key.group(1)} " in caught.value.message
        assert "replay.override.json" in caught.value.message
