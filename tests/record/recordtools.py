"""Shared helpers of the recorder tests: corpus scenarios and script comparison."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from replay_engine.scenario.loading import load_scenario
from tests.conftest import conformance_dir

CORPUS = conformance_dir()

ROUND_TRIP = [
    "Aurora__examples__acp-agent__tests__snapshots__subagent-spawn",
    "Aurora__examples__acp-agent__tests__snapshots__advanced-toolchain",
    "Aurora__apps__cli__tests__snapshots__multi-turn-conversation",
    "Aurora__examples__acp-agent__tests__snapshots__subagent-mixed",
]
"""Conformance scenarios recorded in the round trip: children, tool loops, several turns."""


def corpus_scenario(name: str) -> Path:
    """A conformance scenario directory."""
    assert CORPUS is not None
    return CORPUS / "scenarios" / name


def scripts_json(path: Path) -> list[list[dict[str, Any]]]:
    """Every script's entries of a scenario, as loaded (docs/format.md#override-sidecar JSON)."""
    return [[item.to_json() for item in script.entries] for script in load_scenario(path).scripts]


def plan_of(path: Path) -> list[int]:
    """Calls per session script (primary first), what the test agent is told to make."""
    return [len(script.entries) for script in load_scenario(path).scripts]


def every_byte(directory: Path) -> bytes:
    """Every byte of every file under ``directory`` (names included)."""
    out = bytearray()
    for path in sorted(directory.rglob("*")):
        out += str(path).encode()
        if path.is_file():
            out += path.read_bytes()
    return bytes(out)


def log_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of a log."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]
