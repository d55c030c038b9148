"""What the override editor shows and saves: chunk-level and entry-level comparisons of the
derived and the effective call, the record of a save, and reading the sidecar file as it is.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..errors import OVERRIDE_EDIT, SIDECAR_CHANGED, SidecarError
from ..files import Rename, atomic_write, exclusive_lock, fingerprint
from ..jsonlimits import json_text
from ..models import AnyEntry, ChunksEntry, ScriptEntry, ThrowEntry
from ..scenario.sidecar import Sidecar, parse_sidecar_text

__all__ = ["BACKUP_SUFFIX", "ChunkChange", "EntryComparison", "SavedSidecar", "chunks_of",
           "diff_chunks", "edit_error", "entry_notes", "read_sidecar_file", "render_document",
           "write_sidecar"]

BACKUP_SUFFIX = ".bak"
"""The previous sidecar is kept beside it under this suffix on every save that changes it."""


@dataclass(frozen=True, slots=True)
class ChunkChange:
    """One line of a chunk-level difference between the derived and the effective call."""

    op: Literal["same", "removed", "added"]
    """Kept, only in the derived call, or only in the effective call."""
    chunk: dict[str, Any]
    """The chunk."""


def _chunk_key(chunk: dict[str, Any]) -> str:
    return json.dumps(chunk, sort_keys=True, ensure_ascii=False)


def diff_chunks(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[ChunkChange]:
    """Chunk-by-chunk difference of two calls (a longest-common-subsequence alignment)."""
    if not old or not new:
        return [ChunkChange("removed", c) for c in old] + [ChunkChange("added", c) for c in new]
    a = [_chunk_key(c) for c in old]
    b = [_chunk_key(c) for c in new]
    out: list[ChunkChange] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.extend(ChunkChange("same", c) for c in new[j1:j2])
            continue
        out.extend(ChunkChange("removed", c) for c in old[i1:i2])
        out.extend(ChunkChange("added", c) for c in new[j1:j2])
    return out


def chunks_of(entry: AnyEntry | None) -> list[dict[str, Any]] | None:
    return entry.chunks if isinstance(entry, ChunksEntry | ThrowEntry) else None


@dataclass(frozen=True, slots=True)
class EntryComparison:
    """One call of the preview: the derived entry beside the effective one."""

    index: int
    """Call index in the primary script."""
    derived: ScriptEntry | None
    """The entry derived from the log (None past its end or without a log)."""
    effective: ScriptEntry | None
    """The entry served with the draft applied (None when a list entry was removed)."""
    edited: bool
    """The draft holds an entry at this index (a patch, or a bare-list entry)."""
    changed: bool
    """Derived and effective JSON differ."""
    notes: tuple[str, ...]
    """Entry-level differences (kind, message, code, readyFile)."""
    chunk_changes: tuple[ChunkChange, ...]
    """Chunk-level difference when both sides carry chunks and they differ."""


def entry_notes(derived: AnyEntry | None, effective: AnyEntry | None) -> tuple[str, ...]:
    if derived is None or effective is None:
        return ("added",) if derived is None else ("removed",)
    notes: list[str] = []
    if derived.kind != effective.kind:
        notes.append(f"kind {derived.kind} -> {effective.kind}")
    fields_before, fields_after = vars(derived), vars(effective)  # getattr misses are slow
    for name in ("message", "code", "readyFile"):
        before, after = fields_before.get(name), fields_after.get(name)
        if before != after and after is not None:
            notes.append(f"{name} {after!r}")
    return tuple(notes)


@dataclass(frozen=True, slots=True)
class SavedSidecar:
    """What :meth:`OverrideDraft.save` wrote, so a file watcher can recognise its own write."""

    path: Path
    """The sidecar written."""
    data: bytes
    """The exact bytes now in the file."""
    sha256: str
    """Hex digest of ``data`` (compare with :func:`fingerprint`)."""
    backup: Path | None
    """Where the previous file was kept (None when there was none or nothing changed)."""
    written: bool
    """False when the file already held exactly these bytes (nothing was touched)."""

    def is_current(self) -> bool:
        """True while the file still holds what was saved (a watcher may skip reloading it)."""
        return fingerprint(self.path) == self.sha256


def render_document(document: Any) -> str:
    """The sidecar text for a document: indented, UTF-8 safe (lone surrogates kept escaped)."""
    return json_text(document, indent=2) + "\n"


def edit_error(message: str, path: Path, location: str) -> SidecarError:
    return SidecarError(f"{path}: {message}", file=str(path), location=location, code=OVERRIDE_EDIT)


def read_sidecar_file(path: Path, loaded: Sidecar | None = None, *, generations: bool = False
                      ) -> tuple[Sidecar | None, str | None]:
    """The sidecar at ``path`` (validated) and the SHA-256 of its bytes; (None, None) if absent.

    ``loaded``, a sidecar already read from ``path``, is reused while the file still holds the
    same bytes (validating a large sidecar costs far more than hashing it). ``generations``:
    the scenario is read by generation, so a throw may carry ``accepted``
    (docs/format.md#v2-scripts-sidecar-headers).
    """
    if not path.is_file():
        return None, None
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if loaded is not None and loaded.sha256 == digest and Path(loaded.file) == path:
        return loaded, digest
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SidecarError(f"{path}: not UTF-8 text; save it as UTF-8 JSON.", file=str(path)) from None
    return parse_sidecar_text(text.replace("\r\n", "\n").replace("\r", "\n"), str(path),
                              generations=generations), digest


def write_sidecar(path: Path, text: str, base_digest: str | None, *,
                  rename: Rename | None = None) -> SavedSidecar:
    """Write already validated sidecar ``text``: the old file kept as ``.bak``, the new one
    written atomically, both under the sidecar's lock.

    ``base_digest`` is the SHA-256 of the file as the caller read it (None: it did not exist);
    when the file changed on disk since, nothing is written, so of concurrent saves from one
    base exactly one writes.
    """
    data = text.encode("utf-8")
    digest = hashlib.sha256(data).hexdigest()
    backup: Path | None = None
    with exclusive_lock(path):
        try:
            old: bytes | None = path.read_bytes()
        except FileNotFoundError:
            old = None
        current = hashlib.sha256(old).hexdigest() if old is not None else None
        if current != base_digest and current != digest:
            raise SidecarError(
                f"{path}: not saved: the file changed on disk since this edit read it "
                "(another save or an editor wrote it). Nothing was written; run the command "
                "again or reopen the editor to start from the new content.",
                file=str(path), code=SIDECAR_CHANGED)
        written = current != digest
        if written:
            if old is not None:
                backup = path.with_name(path.name + BACKUP_SUFFIX)
                atomic_write(backup, old, rename=rename)
            atomic_write(path, data, rename=rename)
    return SavedSidecar(path, data, digest, backup, written)
