"""A reload's slow part done ahead, off the event loop: the new scripts' placeholder scan and
what they change against the scripts served, ready for ``ReplayEngine.reload`` to swap in at
once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..models import SessionScript
from .binding import PlaceholderScan
from .state import diff_scripts


@dataclass(frozen=True, slots=True)
class StagedScripts:
    """Scripts made ready to swap in (``ReplayEngine.stage``)."""

    scripts: list[SessionScript]
    scan: PlaceholderScan
    """Every entry of ``scripts`` scanned for placeholders."""
    changes: list[dict[str, Any]]
    """``diff_scripts`` of ``base`` and ``scripts``."""
    base: list[SessionScript]
    """The scripts served when they were staged (the changes are against these)."""


def stage_scripts(base: list[SessionScript], scripts: Sequence[SessionScript]) -> StagedScripts:
    """Scan ``scripts`` and diff them against ``base``; touches nothing shared, so it may run
    in a worker thread while the event loop serves."""
    fresh = list(scripts)
    scan = PlaceholderScan()
    scan.prepare(fresh)
    return StagedScripts(fresh, scan, diff_scripts(base, fresh), base)
