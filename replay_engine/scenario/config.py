"""Reading the replay config file a user passes with ``--config`` (TOML, or JSON by name)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pydantic

from ..errors import ConfigError
from ..jsonlimits import (
    DEPTH_PROBLEM,
    NonFiniteNumber,
    finite_float,
    finite_int,
    line_of,
    non_finite_problem,
    too_deep,
)
from ..models import ReplayConfig, plain_message
from .layout import not_a_file


def _location(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(document)"


def _named(loc: tuple[int | str, ...], data: Any) -> str:
    """`` (provider 'p', model 'm')`` for a location inside ``providers[i].models[j]``: the ids
    the user wrote, beside the positions."""
    if len(loc) < 2 or loc[0] != "providers" or not isinstance(loc[1], int):
        return ""
    providers = data.get("providers") if isinstance(data, dict) else None
    provider = providers[loc[1]] if isinstance(providers, list) and loc[1] < len(providers) else None
    if not isinstance(provider, dict) or not isinstance(provider.get("id"), str):
        return ""
    names = [f"provider {provider['id']!r}"]
    if len(loc) >= 4 and loc[2] == "models" and isinstance(loc[3], int):
        models = provider.get("models")
        model = models[loc[3]] if isinstance(models, list) and loc[3] < len(models) else None
        if isinstance(model, dict) and isinstance(model.get("id"), str):
            names.append(f"model {model['id']!r}")
    return f" ({', '.join(names)})"


def _decode(text: str, file: str) -> Any:
    """The config document: JSON when the name ends in .json, else TOML; numbers finite."""
    if file.endswith(".json"):
        try:
            return json.loads(text, parse_float=finite_float, parse_int=finite_int,
                              parse_constant=_no_constant)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{file}: line {exc.lineno}, column {exc.colno}: not valid JSON "
                              f"({exc.msg}).", file=file, line=exc.lineno) from None
        except NonFiniteNumber:
            raise
        except ValueError as exc:
            raise ConfigError(f"{file}: not valid JSON ({exc}).", file=file) from None
    try:
        return tomllib.loads(text, parse_float=finite_float)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: not valid TOML ({exc}); use a .json name for JSON.",
                          file=file) from None


def _no_constant(name: str) -> Any:
    raise NonFiniteNumber(name)


def load_serve_config(path: str | Path) -> ReplayConfig:
    """Read and validate a ``--config`` file (TOML, or JSON when it ends in .json)."""
    file = str(path)
    kind = not_a_file(path)
    if kind is not None:
        raise ConfigError(f"{file}: the config file is {kind}; pass a TOML or JSON file.",
                          file=file)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read the config file ({exc.strerror}).",
                          file=file) from None
    except UnicodeDecodeError:
        raise ConfigError(f"{file}: the config file is not UTF-8 text.", file=file) from None
    data: Any
    if too_deep(text):
        raise ConfigError(f"{file}: the config file is {DEPTH_PROBLEM}.", file=file)
    try:
        data = _decode(text, file)
    except NonFiniteNumber as exc:
        line = line_of(text, exc.literal)
        raise ConfigError(f"{file}: line {line}: {non_finite_problem(exc.literal)}.",
                          file=file, line=line) from None
    except RecursionError:
        raise ConfigError(f"{file}: the config file is {DEPTH_PROBLEM}.", file=file) from None
    try:
        config = ReplayConfig.model_validate(data)
    except pydantic.ValidationError as exc:
        problems = [f"{_location(tuple(e['loc']))}{_named(tuple(e['loc']), data)}: {plain_message(e)}"
                    for e in exc.errors()]
        first = exc.errors()[0]
        raise ConfigError(
            f"{file}: invalid config: " + "; ".join(problems)
            + ". Expected keys: providers (a list of {id, name?, models?}) and paceMs.",
            file=file, location=_location(tuple(first["loc"])),
        ) from None
    named = [k for k in ("file", "overrideFile", "childFiles")
             if k in (data if isinstance(data, dict) else {})]
    if named:
        raise ConfigError(
            f"{file}: {', '.join(named)}: serve takes the scenario from its SCENARIO argument; "
            "remove these keys from the config file.", file=file, location=named[0])
    return config
