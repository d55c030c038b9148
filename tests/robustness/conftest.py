"""Helpers for the bad-input tests: a copy of a sample scenario, and the CLI as a process."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_scenarios" / "basic-chat"


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """``dsh-replay ARGV`` in a fresh interpreter."""
    return subprocess.run([sys.executable, "-m", "replay_engine.cli", *argv], cwd=ROOT,
                          capture_output=True, text=True, encoding="utf-8", timeout=60)


def assert_typed_failure(result: subprocess.CompletedProcess[str], code: str | None = None) -> None:
    """Exit 1, no traceback, and (when given) the error code printed."""
    assert "Traceback" not in result.stderr, result.stderr
    assert "Traceback" not in result.stdout, result.stdout
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    if code is not None:
        assert code in result.stdout + result.stderr, (result.stdout, result.stderr)


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    """A fresh copy of the basic-chat sample."""
    target = tmp_path / "scenario"
    shutil.copytree(SAMPLE, target)
    return target
