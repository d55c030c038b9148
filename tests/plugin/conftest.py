"""Fixtures of the plugin's tests: a generated test project, and providers to record from."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from tests.conftest import SAMPLES
from tests.plugin.plugintools import AGENT, INI, ThreadedUpstream


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A test project holding the agent and a copy of the basic-chat sample.

    Its pytest runs load only the plugins a test names (the installed ones take seconds to
    load); the first test shows the plugin also arrives through its ``pytest11`` entry point.
    """
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(key, raising=False)
    pytester.makefile(".ini", pytest=INI)
    pytester.makepyfile(agent=AGENT)
    shutil.copytree(SAMPLES / "basic-chat", pytester.path / "scenarios" / "basic-chat")
    return pytester


@pytest.fixture
def fake_upstream() -> Iterator[ThreadedUpstream]:
    """The scripted fake provider (``.url("ok")``, ``"auth"``, ``"rate"``, ``"broken"``,
    ``"hang"``)."""
    upstream = ThreadedUpstream()
    try:
        yield upstream
    finally:
        upstream.close()
