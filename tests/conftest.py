"""Shared fixtures: where the sample scenarios and the conformance corpus live."""

from __future__ import annotations

import os
from pathlib import Path

import httpcore
import httpx
import pytest

# pytester restores sys.modules after every test that uses it, dropping modules first imported
# during that test. httpx imports httpcore lazily and maps its exceptions by class, so an
# httpcore imported (and dropped) inside a pytester test would leave later tests with httpx
# failing to recognise httpcore's errors. Importing both here keeps them in every snapshot.
assert httpcore and httpx.HTTPTransport()

pytest_plugins = ["pytester"]  # the pytest plugin's tests run pytest on generated test files

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_scenarios"


def conformance_dir() -> Path | None:
    """The shared conformance corpus, if present."""
    configured = os.environ.get("DSH_REPLAY_CONFORMANCE_DIR")
    path = Path(configured) if configured else ROOT.parent / "shared" / "conformance"
    return path if (path / "scenarios").is_dir() else None


def conformance_gen_dir() -> Path | None:
    """The shared corpus of log generations v2 to v7, if present."""
    configured = os.environ.get("DSH_REPLAY_CONFORMANCE_GEN_DIR")
    path = Path(configured) if configured else ROOT.parent / "shared" / "conformance-gen"
    return path if (path / "scenarios").is_dir() else None


@pytest.fixture
def samples() -> Path:
    """The bundled sample scenarios."""
    return SAMPLES


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio (the loop the server and the TUI use)."""
    return "asyncio"
