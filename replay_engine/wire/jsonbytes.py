"""JSON bytes for the wire that never fail on text a scenario may hold.

A string from a log or sidecar may carry a lone surrogate (``"\\ud83d"``: ``JSON.parse``
accepts it, so the scenario format does). UTF-8 cannot carry it, a JSON ``\\u`` escape can: the fast
encoder is used as is, and only a value it refuses is re-encoded with the escapes.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse as _StarletteJSONResponse

from ..jsonlimits import encode_json as encode
from ..jsonlimits import json_text

__all__ = ["JSONResponse", "encode"]


class JSONResponse(_StarletteJSONResponse):
    """Starlette's JSON response, with lone surrogates kept as escapes instead of failing."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return json_text(content, allow_nan=False, separators=(",", ":")).encode("utf-8")
