"""Persisted sessions: the harness's own session store, ``session[.vK].jsonl.zstd``
(docs/format.md#persisted-sessions).

The store keeps each session in a directory of its own as concatenated, checksummed
Zstandard frames: the first holds the header line, each later one a whole batch of appended
lines. Such a file (or a directory holding one) opens as a one-session scenario, so a user
can replay and debug a real session from their own history. A torn last frame (the store
was killed while appending) keeps its complete lines and is reported as a warning; a frame
that fails its checksum or does not decode is an error naming the file and offset.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import LogParseError, ScenarioNotFoundError

PERSISTED_RE = re.compile(r"^session(?:\.v([1-9][0-9]*))?\.jsonl\.zstd$")
"""A persisted session's file name: ``session[.vK].jsonl.zstd``."""


@dataclass(slots=True)
class PersistedLog:
    """A persisted session decompressed: its JSONL text, and what was wrong but kept."""

    path: Path
    generation: int
    data: bytes
    warnings: list[str] = field(default_factory=list)


def persisted_generation(name: str) -> int | None:
    """The generation a persisted session's file name gives, or None for any other name."""
    match = PERSISTED_RE.match(name)
    if match is None:
        return None
    return int(match.group(1)) if match.group(1) else 0


def find_persisted(path: str | Path) -> Path | None:
    """The persisted session ``path`` names: the file itself, or in a directory without any
    plain log, its highest generation of ``session[.vK].jsonl.zstd`` (None: not one)."""
    found = persisted_selection(path)
    return found[0] if found is not None else None


def persisted_selection(path: str | Path) -> tuple[Path, list[Path]] | None:
    """The persisted session ``path`` names and the older generations beside it that are
    ignored (docs/format.md#generation-selection: the highest generation wins), or None when it names none."""
    root = Path(path)
    if root.is_file() or not root.exists():
        named = persisted_generation(root.name) is not None and root.is_file()
        return (root, []) if named else None
    if not root.is_dir():
        return None
    try:
        names = os.listdir(root)
    except OSError:
        return None
    if any(name.startswith("session") and name.endswith(".jsonl") for name in names):
        # a scenario directory of plain logs (docs/format.md#generation-selection: .zstd names are not logs)
        return None
    found = sorted((g, name) for name in names if (g := persisted_generation(name)) is not None)
    if not found:
        return None
    return root / found[-1][1], [root / name for _, name in found[:-1]]


def persisted_notes(path: str | Path) -> list[str]:
    """What a persisted session was read from, and the older generations it ignored (for
    ``validate``; ``inspect`` and the debugger show the same from the loaded scenario)."""
    from .layout import generation_label

    found = persisted_selection(path)
    if found is None:
        return []
    chosen, ignored = found
    notes = [f"read {chosen.name} ({generation_label(chosen)})"]
    if ignored:
        notes.append("ignored older generations: " + ", ".join(
            f"{p.name} ({generation_label(p)})" for p in ignored))
    return notes


_FIRST_PIECE = 4096
"""Compressed bytes first given to a frame: store frames (one append batch) are small, and
what a frame leaves over is copied, so pieces start small and double while a frame goes on."""


def read_persisted(path: Path) -> PersistedLog:
    """Decompress a persisted session frame by frame (docs/format.md#persisted-sessions), over a view of the
    file: each frame is given pieces of it, never the whole rest, so many frames stay linear."""
    import zstandard  # loaded only for persisted sessions

    file = str(path)
    generation = persisted_generation(path.name)
    if generation is None:
        raise ScenarioNotFoundError(f"{file}: not a persisted session name; persisted sessions "
                                    "are session[.vK].jsonl.zstd.", file=file)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise LogParseError(f"{file}: cannot read the persisted session ({exc.strerror or exc}).",
                            file=file, code="LOG_UNREADABLE") from None
    decompressor = zstandard.ZstdDecompressor()
    view = memoryview(raw)
    size = len(raw)
    parts: list[bytes] = []
    warnings: list[str] = []
    offset = 0
    while offset < size:
        frame = decompressor.decompressobj()
        out: list[bytes] = []
        at, piece = offset, _FIRST_PIECE
        try:
            while not frame.eof and at < size:
                out.append(frame.decompress(view[at:at + piece]))
                at += piece
                piece *= 2
        except zstandard.ZstdError as exc:
            raise LogParseError(
                f"{file}: the zstd frame at byte {offset} is damaged ({exc}); the session cannot "
                "be read past it. Restore the file from a backup, or cut it at that byte to keep "
                "the frames before it.", file=file) from None
        text = b"".join(out)
        if not frame.eof:
            kept = text[:text.rfind(b"\n") + 1]
            lines = kept.count(b"\n")
            warnings.append(
                f"{file}: the last zstd frame (at byte {offset}) is torn, as when the session "
                f"store is killed while appending; its {lines} complete line(s) are kept and "
                "the rest of it is dropped.")
            parts.append(kept)
            break
        parts.append(text)
        offset = min(at, size) - len(frame.unused_data)
    return PersistedLog(path, generation, b"".join(parts), warnings)
