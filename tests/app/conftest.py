"""Fixtures shared by the debugger tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """Textual runs on asyncio."""
    return "asyncio"


@pytest.fixture(autouse=True)
def _no_animation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stable screens: no animations, no blinking."""
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
