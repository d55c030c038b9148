"""docs/format.md#provider-catalog and the configuration models: the provider catalog and ReplayConfig."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from replay_engine import ModelConfig, ProviderConfig, ReplayConfig


def test_provider_defaults() -> None:
    provider = ProviderConfig.model_validate({"id": "replay"})
    assert (provider.name, provider.models, provider.retryPolicy) == ("replay", [], None)
    named = ProviderConfig.model_validate({"id": "r", "name": "Replay", "retryPolicy": {"max": 2},
                                           "models": [{"id": "m1"}]})
    assert named.name == "Replay" and named.models[0].id == "m1"


@pytest.mark.parametrize(
    "model",
    [
        {"id": "m", "contextWindow": 128000},
        {"id": "m", "contextWindow": 8.0},
        {"id": "m", "inputModalities": ["text", "image"]},
        {"id": "m", "reasoningEfforts": ["low", "high"], "defaultReasoningEffort": "high"},
        {"id": "m", "name": "M", "description": "d", "defaultMaxTokens": 10},
    ],
)
def test_valid_models(model: dict[str, Any]) -> None:
    ModelConfig.model_validate(model)


@pytest.mark.parametrize(
    ("model", "fragment"),
    [
        ({"id": ""}, "at least 1 character"),
        ({"id": "m", "contextWindow": 0}, "greater than 0"),
        ({"id": "m", "contextWindow": -5}, "greater than 0"),
        ({"id": "m", "contextWindow": 1.5}, "must be an integer"),
        ({"id": "m", "contextWindow": True}, "must be an integer"),
        ({"id": "m", "inputModalities": ["audio"]}, "'text' or 'image'"),
        ({"id": "m", "defaultReasoningEffort": "high"}, "must be one of reasoningEfforts"),
        ({"id": "m", "reasoningEfforts": ["low"], "defaultReasoningEffort": "high"}, "must be one of"),
        ({"id": "m", "colour": "red"}, "Extra inputs are not permitted"),
    ],
)
def test_invalid_models(model: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ValidationError) as caught:
        ModelConfig.model_validate(model)
    assert fragment in str(caught.value)


@pytest.mark.parametrize(("pace", "ok"), [(0, True), (25, True), (3.0, True), (-1, False), (0.5, False),
                                          (True, False), ("5", False)])
def test_replay_config_pace(pace: Any, ok: bool) -> None:
    if ok:
        assert ReplayConfig.model_validate({"paceMs": pace}).paceMs == int(pace)
    else:
        with pytest.raises(ValidationError):
            ReplayConfig.model_validate({"paceMs": pace})


def test_replay_config_defaults() -> None:
    config = ReplayConfig()
    assert (config.file, config.overrideFile, config.childFiles, config.providers, config.paceMs) == (
        None, None, [], None, 0)
