"""Every dialect the demo agent (and the debugger's ``d``) offers works without the optional
SDKs: ``dsh-replay demo-agent --dialect D`` runs in an interpreter where importing anthropic,
google-genai or any other dev extra fails, as it does after a plain ``pip install .``.

CI also installs without extras into a fresh venv and drives each dialect for real
(``.ci/plain_install_check.sh``); this test finds the same defect in a second.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from replay_engine.server import serve_scenario
from replay_engine.testing.demo_agent import DEMO_DIALECTS

pytestmark = pytest.mark.anyio

OPTIONAL = ("anthropic", "google", "langchain_core", "langchain_openai", "langchain_anthropic",
            "pydantic_ai", "agents", "vcr", "orjson")
"""Top-level modules of the extras (dev, bench): none is there on a plain install."""

WITHOUT_EXTRAS = f"""
import importlib.abc, sys
class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {OPTIONAL!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, NotInstalled())
from replay_engine.cli.dispatch import run
sys.argv = ["dsh-replay", *sys.argv[1:]]
sys.exit(run())
"""


async def test_the_optional_sdks_are_really_blocked() -> None:
    importing = WITHOUT_EXTRAS.replace("from replay_engine", "import anthropic\nfrom replay_engine")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", importing, "version",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await proc.communicate()
    assert proc.returncode != 0 and b"No module named 'anthropic'" in out


@pytest.mark.parametrize("dialect", DEMO_DIALECTS)
async def test_each_dialect_runs_without_the_optional_sdks(samples: Path, dialect: str) -> None:
    async with serve_scenario(samples / "basic-chat", port=0) as server:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", WITHOUT_EXTRAS, "demo-agent", server.url, "--dialect", dialect,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
        journal = server.engine.journal()
    text = out.decode()
    assert proc.returncode == 0, text
    assert "Traceback" not in text and "FAIL" not in text, text
    assert [r.dialect for r in journal] == [dialect, dialect]
