"""The primary session's calls as ``replay.override.json``: once one of them failed upstream,
the bare list deciding every call of the primary log (docs/format.md#recording), rewritten atomically per
call.

A call's entry is written before its log lines, so a recorder killed between the two writes
leaves a list that still decides every call of the log. When the log write fails instead,
the entry is taken back and the file put back as it was (the previous file restored from a
hard link kept during the write, or removed when there was none), so the sidecar and the log
hold the same calls.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..authoring.compare import render_document
from ..errors import ReplayError
from ..files import atomic_write
from ..scenario.layout import SIDECAR_NAME
from ..scenario.sidecar import validate_sidecar
from .calls import write_error
from .dialect import Chunk


class PrimarySidecar:
    """Every primary call as a sidecar entry, and the file once one of them failed."""

    def __init__(self, directory: Path, redact: Callable[[str], str]) -> None:
        self.path = directory / SIDECAR_NAME
        self.redact = redact
        self.entries: list[dict[str, Any]] = []
        self.failed = False
        """A primary call failed upstream: the file decides every call."""

    def write(self) -> Path:
        """``replay.override.json`` as the bare list of every primary call, atomically, in the
        form ``dsh-replay override`` writes (validated first; InputError RECORD_WRITE when it
        cannot be written)."""
        validate_sidecar(self.entries, str(self.path))
        text = render_document(self.entries)
        try:
            atomic_write(self.path, self.redact(text).encode("utf-8"))
        except OSError as exc:
            raise write_error(self.path, exc, len(self.entries) - 1) from None
        return self.path

    @contextlib.contextmanager
    def deciding(self, chunks: list[Chunk], failure: tuple[str, str] | None) -> Iterator[None]:
        """Add one call's entry (the file rewritten once any call failed) around the block that
        writes the call to the log; when the block raises, the entry and the file are taken
        back to what they were."""
        was_failed = self.failed
        if failure is None:
            self.entries.append({"kind": "chunks", "chunks": chunks})
        else:
            self.entries.append({"kind": "throw", "chunks": chunks,
                                 "message": failure[0] or "upstream failure",
                                 "code": failure[1] or "SERVER"})
            self.failed = True
        previous = self._keep_previous() if was_failed else None
        try:
            if self.failed:
                self.write()
            yield
        except BaseException:
            self.entries.pop()
            self.failed = was_failed
            self._put_back(previous, existed=was_failed)
            raise
        finally:
            if previous is not None:
                with contextlib.suppress(OSError):
                    os.unlink(previous)

    def _keep_previous(self) -> Path | None:
        """A hard link to the current file (no data copied: it needs no free space), or None
        where links cannot be made."""
        keep = self.path.with_name(f".{self.path.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
        try:
            os.link(self.path, keep)
        except OSError:
            return None
        return keep

    def _put_back(self, previous: Path | None, *, existed: bool) -> None:
        """The file as it was before the entry taken back: the kept link renamed over it, the
        list rendered again (no link), or no file when none existed."""
        with contextlib.suppress(OSError, ReplayError):
            if previous is not None:
                os.replace(previous, self.path)
            elif existed:
                self.write()
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path)
