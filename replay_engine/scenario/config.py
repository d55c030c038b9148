"""Reading the replay config file a user passes with ``--config`` (TOML, or JSON by name)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pydantic

from ..errors import ConfigError
from ..models import ReplayConfig


def _location(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(document)"


def load_serve_config(path: str | Path) -> ReplayConfig:
    """Read and validate a ``--config`` file (TOML, or JSON when it ends in .json)."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read the config file ({exc.strerror}).",
                          file=file) from None
    except UnicodeDecodeError:
        raise ConfigError(f"{file}: the config file is not UTF-8 text.", file=file) from None
    data: Any
    if file.endswith(".json"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{file}: line {exc.lineno}, column {exc.colno}: not valid JSON "
                              f"({exc.msg}).", file=file, line=exc.lineno) from None
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{file}: not valid TOML ({exc}); use a .json name for JSON.",
                              file=file) from None
    try:
        config = ReplayConfig.model_validate(data)
    except pydantic.ValidationError as exc:
        problems = [f"{_location(tuple(e['loc']))}: {e['msg']}" for e in exc.errors()]
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
