"""The later model keys of docs/format.md#provider-catalog in ``serve --config``: ``imageRequestTokens``,
``systemPromptUpdate`` and ``toolUpdate`` load when valid (catalog facts: nothing served
changes) and are refused at load, naming the provider, the model and the key, when not."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import openai
import pytest

from replay_engine.errors import ConfigError
from replay_engine.scenario.config import load_serve_config

FULL = {"id": "m", "inputModalities": ["text", "image"], "imageRequestTokens": 1600,
        "systemPromptUpdate": "in-history", "toolUpdate": "addition-only"}


def _config(tmp_path: Path, model: dict[str, Any]) -> Path:
    path = tmp_path / "replay.json"
    path.write_text(json.dumps({"providers": [{"id": "acme", "models": [model]}]}))
    return path


@pytest.mark.parametrize("model", [
    FULL,
    {"id": "m", "toolUpdate": "in-history"},
    {"id": "m", "systemPromptUpdate": "in-history"},
    {"id": "m", "inputModalities": ["image"], "imageRequestTokens": 9007199254740991},
])
def test_valid_keys_load(tmp_path: Path, model: dict[str, Any]) -> None:
    [provider] = load_serve_config(_config(tmp_path, model)).providers or []
    loaded = provider.models[0].model_dump(exclude_none=True)
    assert loaded == model


def test_the_toml_form_loads(tmp_path: Path) -> None:
    path = tmp_path / "replay.toml"
    path.write_text('[[providers]]\nid = "acme"\n[[providers.models]]\nid = "m"\n'
                    'inputModalities = ["image"]\nimageRequestTokens = 258\n'
                    'systemPromptUpdate = "in-history"\ntoolUpdate = "in-history"\n')
    [provider] = load_serve_config(path).providers or []
    assert (provider.models[0].imageRequestTokens, provider.models[0].toolUpdate) == (258, "in-history")


@pytest.mark.parametrize(("change", "key", "why"), [
    ({"imageRequestTokens": 0}, "imageRequestTokens", "greater than 0"),
    ({"imageRequestTokens": 2.5}, "imageRequestTokens", "must be an integer"),
    ({"imageRequestTokens": 9007199254740992}, "imageRequestTokens", "must be an integer"),
    ({"imageRequestTokens": True}, "imageRequestTokens", "must be an integer"),
    ({"inputModalities": ["text"]}, "imageRequestTokens", "only when inputModalities includes 'image'"),
    ({"inputModalities": None}, "imageRequestTokens", "only when inputModalities includes 'image'"),
    ({"systemPromptUpdate": "addition-only"}, "systemPromptUpdate", "'in-history'"),
    ({"systemPromptUpdate": 1}, "systemPromptUpdate", "'in-history'"),
    ({"toolUpdate": "replace"}, "toolUpdate", "'in-history' or 'addition-only'"),
])
def test_invalid_keys_name_the_provider_the_model_and_the_key(
        tmp_path: Path, change: dict[str, Any], key: str, why: str) -> None:
    model = {k: v for k, v in {**FULL, **change}.items() if v is not None}
    with pytest.raises(ConfigError) as caught:
        load_serve_config(_config(tmp_path, model))
    message = caught.value.message
    assert "provider 'acme'" in message and "model 'm'" in message, message
    assert key in message and why in message, message


def test_the_error_reads_as_the_docs_show_it(tmp_path: Path) -> None:
    # docs/serving.md quotes this message; pydantic's "Value error, " prefix is not part of it.
    with pytest.raises(ConfigError) as caught:
        load_serve_config(_config(tmp_path, {"id": "m", "imageRequestTokens": 5}))
    assert ("providers[0].models[0] (provider 'acme', model 'm'): imageRequestTokens is allowed "
            "only when inputModalities includes 'image'") in caught.value.message
    assert "Value error" not in caught.value.message
    # A document that is not an object is said in the sidecar's words, not a class name.
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(ConfigError) as caught:
        load_serve_config(tmp_path / "list.json")
    assert f"{tmp_path / 'list.json'}: invalid config: (document): must be an object." in (
        caught.value.message)


def test_serve_config_with_the_keys_serves_the_catalog(tmp_path: Path, samples: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "replay_engine.cli", "serve", str(samples / "basic-chat"),
         "--port", "0", "--config", str(_config(tmp_path, FULL))],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), proc.stderr.read() if proc.stderr else ""
        client = openai.OpenAI(base_url=url + "/v1", api_key="replay", max_retries=0)
        assert [m.id for m in client.models.list()] == ["m"]
        client.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
