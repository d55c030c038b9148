"""Author ``replay.override.json``: edit a draft of the primary's sidecar, preview it, save it.

The draft starts from a loaded :class:`~replay_engine.scenario.loading.Scenario` and the
sidecar file as it is on disk. Its form follows the file: ``patches`` when the
file is new or already in that form, a bare list stays a bare list. Every edit
is validated with the models that load sidecars, and :meth:`OverrideDraft.save`
validates the whole document again before writing it atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import (
    OVERRIDE_EDIT,
    UNDECIDED_CALL,
    UNFINISHED_CALL,
    ConfigError,
    EntryProblem,
    EntryTextError,
    ReplayError,
    SidecarError,
)
from ..files import Rename, atomic_write, fingerprint
from ..models import AnyEntry, ChunksEntry, ReplayConfig, ScriptEntry, entry_to_json
from ..scenario.derive_fast import load_log
from ..scenario.loading import Scenario, reads_by_generation
from ..scenario.logscan import gc_paused
from ..scenario.persisted import persisted_generation
from ..scenario.sidecar import Sidecar, SidecarForm, apply_sidecar, parse_sidecar_text, validate_entry
from .compare import (
    BACKUP_SUFFIX,
    ChunkChange,
    EntryComparison,
    SavedSidecar,
    chunks_of,
    diff_chunks,
    edit_error,
    entry_notes,
    read_sidecar_file,
    render_document,
    write_sidecar,
)
from .entry_text import parse_entry_text

__all__ = [
    "BACKUP_SUFFIX",
    "ChunkChange",
    "EntryComparison",
    "EntryProblem",
    "EntryTextError",
    "OverrideDraft",
    "SavedSidecar",
    "atomic_write",
    "diff_chunks",
    "fingerprint",
    "parse_entry_text",
    "read_sidecar_file",
    "write_sidecar",
]


def no_sidecar_error(config: ReplayConfig) -> ConfigError:
    """Why a scenario has no sidecar to edit: a persisted session given as a file, or a log
    named by DSH_SNAPSHOT_FILE without DSH_SNAPSHOT_OVERRIDE."""
    if config.file and persisted_generation(Path(config.file).name) is not None:
        return ConfigError(f"{config.file}: a persisted session opened as a file has no "
                           "replay.override.json; open a scenario directory to override its calls.",
                           file=config.file, code=OVERRIDE_EDIT)
    return ConfigError("this scenario has no sidecar path (loaded from DSH_SNAPSHOT_FILE without "
                       "DSH_SNAPSHOT_OVERRIDE); set DSH_SNAPSHOT_OVERRIDE or open the scenario "
                       "directory.", code=OVERRIDE_EDIT)


class OverrideDraft:
    """An editable copy of the primary's sidecar, with preview and atomic save."""

    def __init__(
        self,
        path: Path,
        form: SidecarForm,
        derived: list[ScriptEntry] | None,
        *,
        entries: list[AnyEntry] | None = None,
        patches: list[tuple[int, AnyEntry]] | None = None,
        base_digest: str | None = None,
        derived_note: str | None = None,
        undecided: dict[int, ScriptEntry] | None = None,
        generations: bool = False,
    ) -> None:
        if form == "patches" and derived is None:
            raise SidecarError(
                f"{path}: a patches sidecar needs the derived primary script, but the primary "
                "log is missing; record session.jsonl or use a bare-list sidecar.",
                file=str(path),
            )
        self.path = path
        self.generations = generations
        """The scenario is read by generation: a throw may carry ``accepted``
        (docs/format.md#v2-scripts-sidecar-headers)."""
        self.form: SidecarForm = form
        self.derived = derived
        self.derived_note = derived_note
        self._entries: list[AnyEntry] = list(entries or [])
        self._patches: list[tuple[int, AnyEntry]] = list(patches or [])
        self._base_digest = base_digest
        self._undecided: dict[int, ScriptEntry] = dict(undecided or {})
        """Bare-list entries still holding a recorded call that never finished, by list index."""
        self.unfinished: tuple[int, ...] = tuple(sorted(self._undecided))
        """The calls of the log that never finished: undecided when the draft opened, or decided
        by the bare list on disk (they are why it is a list)."""
        self._rendered: str | None = None
        self._script: list[ScriptEntry] | None = None
        self._saved_state = (list(self._entries), list(self._patches))
        """The content as loaded or last saved; rendered only when :attr:`dirty` asks."""
        self._saved_text: str | None = None

    @classmethod
    def open(cls, scenario: Scenario) -> OverrideDraft:
        """A draft of the scenario's sidecar as it is on disk now (or an empty patches draft)."""
        config = scenario.config
        if not config.overrideFile:
            raise no_sidecar_error(config)
        path = Path(config.overrideFile)
        primary = Path(config.file) if config.file else None
        generations = reads_by_generation(config)
        sidecar, digest = read_sidecar_file(path, scenario.sidecar, generations=generations)
        form: SidecarForm = sidecar.form if sidecar is not None else "patches"
        derived = scenario.derived_primary
        note: str | None = None
        unfinished: tuple[int, ...] = ()
        if derived is None and primary is not None and primary.is_file():
            try:
                derived = load_log(primary).entries
            except ReplayError as exc:
                if form == "patches":
                    raise
                note = exc.message
                if exc.code == UNFINISHED_CALL:
                    # The bare list decides the calls that never finished: compare it with the
                    # log read leniently, as the draft that wrote it did, not with nothing.
                    lenient = load_log(primary, lenient=True)
                    derived, unfinished = lenient.entries, tuple(lenient.unfinished)
        if sidecar is None:
            return cls(path, form, derived, base_digest=digest, derived_note=note,
                       generations=generations)
        draft = cls(path, form, derived, entries=sidecar.entries, patches=sidecar.patches,
                    base_digest=digest, derived_note=note, generations=generations)
        draft.unfinished = unfinished
        return draft

    # -- reading ------------------------------------------------------------------------

    @property
    def undecided(self) -> dict[int, ScriptEntry]:
        """Calls that never finished in the log and still need a throw, hang or chunks entry."""
        return dict(self._undecided)

    def default_prefix(self, index: int) -> int:
        """Recorded chunks a throw keeps by default: all of an undecided call's, else none."""
        return len(self.recorded_chunks(index)) if index in self._undecided else 0

    @property
    def base_length(self) -> int:
        """Entries an index may address before the append slot (derived or list length)."""
        if self.form == "list":
            return len(self._entries)
        assert self.derived is not None
        return len(self.derived)

    @property
    def patches(self) -> list[tuple[int, AnyEntry]]:
        """The patches (patches form), in document order."""
        return list(self._patches)

    @property
    def entries(self) -> list[AnyEntry]:
        """The entries (bare-list form)."""
        return list(self._entries)

    def edited(self, index: int) -> bool:
        """True when the draft holds an entry at ``index``."""
        if self.form == "list":
            return 0 <= index < len(self._entries)
        return any(at == index for at, _ in self._patches)

    def effective(self) -> list[ScriptEntry]:
        """The primary script served once the draft is saved."""
        if self._script is None:
            if self.form == "list":
                self._script = [ScriptEntry(entry=e, origin="replaced") for e in self._entries]
            else:
                self._script = apply_sidecar(
                    self.derived, Sidecar("patches", [], self._patches, str(self.path)))
        return list(self._script)

    def _edited(self) -> None:
        """Forget what was computed from the previous content (the script and its text)."""
        self._script = None
        self._rendered = None

    def entry_at(self, index: int) -> AnyEntry | None:
        """The effective entry at ``index`` (None past the end)."""
        script = self.effective()
        return script[index].entry if 0 <= index < len(script) else None

    def recorded_chunks(self, index: int) -> list[dict[str, Any]]:
        """Chunks a throw at ``index`` keeps a prefix of: the call's chunks entry, else the log's."""
        current = self.entry_at(index)
        if isinstance(current, ChunksEntry):
            return current.chunks
        if self.form == "patches" and self.derived is not None and index < len(self.derived):
            derived = chunks_of(self.derived[index].entry)
            if derived is not None:
                return derived
        return chunks_of(current) or []

    def compare(self) -> list[EntryComparison]:
        """The effective script beside the derived one, per call, with differences."""
        with gc_paused():
            return self._compare()

    def _compare(self) -> list[EntryComparison]:
        derived = self.derived or []
        script = self.effective()
        edited = ({at for at, _ in self._patches} if self.form == "patches"
                  else set(range(len(self._entries))))
        out: list[EntryComparison] = []
        for i in range(max(len(derived), len(script))):
            d = derived[i] if i < len(derived) else None
            e = script[i] if i < len(script) else None
            if d is not None and e is not None and d.entry is e.entry:
                out.append(EntryComparison(i, d, e, i in edited, False, (), ()))
                continue
            dj = d.to_json() if d is not None else None
            ej = e.to_json() if e is not None else None
            changed = dj != ej
            changes: tuple[ChunkChange, ...] = ()
            before = chunks_of(d.entry) if d is not None else None
            after = chunks_of(e.entry) if e is not None else None
            if changed and before is not None and after is not None and before != after:
                changes = tuple(diff_chunks(before, after))
            out.append(EntryComparison(
                i, d, e, i in edited, changed,
                entry_notes(d.entry if d else None, e.entry if e else None) if changed else (), changes,
            ))
        return out

    # -- editing ------------------------------------------------------------------------

    def _check_index(self, index: int) -> None:
        limit = self.base_length
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index <= limit:
            base = "the bare-list sidecar has" if self.form == "list" else (
                "the derived primary script has")
            choose = f"0..{limit - 1} to replace a call or " if limit else ""
            raise edit_error(
                f"call {index} does not exist: {base} {limit} call(s); choose {choose}{limit} "
                "to append one.", self.path, f"call {index}")

    def put(self, index: int, entry: AnyEntry) -> None:
        """Serve ``entry`` at ``index`` (``index == base_length`` appends)."""
        self._check_index(index)
        self._edited()
        if self.form == "list":
            if index == len(self._entries):
                self._entries.append(entry)
            else:
                self._entries[index] = entry
                self._undecided.pop(index, None)
            return
        for k, (at, _) in enumerate(self._patches):
            if at == index:
                self._patches[k] = (index, entry)
                return
        position = next((k for k, (at, _) in enumerate(self._patches) if at > index),
                        len(self._patches))
        self._patches.insert(position, (index, entry))

    def throw_here(self, index: int, message: str, code: str, prefix: int = 0) -> AnyEntry:
        """Fail call ``index`` with ``code`` after the first ``prefix`` of its recorded chunks."""
        self._check_index(index)
        chunks = self.recorded_chunks(index)
        if isinstance(prefix, bool) or not isinstance(prefix, int) or not 0 <= prefix <= len(chunks):
            raise edit_error(
                f"prefix {prefix} is out of range: call {index} has {len(chunks)} recorded "
                f"chunk(s); keep 0..{len(chunks)} (0 fails before any chunk).",
                self.path, f"call {index}")
        entry = validate_entry({"kind": "throw", "chunks": list(chunks[:prefix]),
                                "message": message, "code": code}, f"call {index}")
        self.put(index, entry)
        return entry

    def hang_here(self, index: int, ready_file: str | None = None) -> AnyEntry:
        """Make call ``index`` hang until cancelled, creating ``ready_file`` once it waits."""
        self._check_index(index)
        doc: dict[str, Any] = {"kind": "hang"}
        if ready_file is not None:
            doc["readyFile"] = ready_file
        entry = validate_entry(doc, f"call {index}")
        self.put(index, entry)
        return entry

    def set_entry_text(self, index: int, text: str, source: str = "entry") -> AnyEntry:
        """Serve the entry (or bare chunk list) given as JSON text at ``index``."""
        self._check_index(index)
        entry = parse_entry_text(text, source)
        self.put(index, entry)
        return entry

    def append_index(self) -> int:
        """The index a new call is appended at; a patches sidecar has one such slot."""
        index = self.base_length
        if self.form == "patches" and self.edited(index):
            raise edit_error(
                f"call {index} is already appended and a patches sidecar can append only one "
                f"call (at = derived length {index}); replace it (--at {index}) or remove it "
                f"(--remove {index}) instead.", self.path, f"call {index}")
        return index

    def append(self, entry: AnyEntry) -> int:
        """Add a call after the last one (the retry slot after a throw); returns its index."""
        index = self.append_index()
        self.put(index, entry)
        return index

    def remove(self, index: int) -> None:
        """Drop the patch at ``index`` (back to the derived entry) or the bare-list entry."""
        if self.form == "list":
            if isinstance(index, bool) or not isinstance(index, int) or not (
                    0 <= index < len(self._entries)):
                raise edit_error(
                    f"call {index} does not exist: the bare-list sidecar has "
                    f"{len(self._entries)} entr(y/ies); remove one of 0..{len(self._entries) - 1}.",
                    self.path, f"call {index}")
            del self._entries[index]
            self._edited()
            self._undecided = {(i if i < index else i - 1): e
                               for i, e in self._undecided.items() if i != index}
            return
        for k, (at, _) in enumerate(self._patches):
            if at == index:
                del self._patches[k]
                self._edited()
                return
        patched = ", ".join(str(at) for at, _ in sorted(self._patches)) or "none"
        raise edit_error(
            f"call {index} is not patched, so there is nothing to remove (patched calls: "
            f"{patched}).", self.path, f"call {index}")

    # -- the document -------------------------------------------------------------------

    def document(self) -> Any:
        """The sidecar as JSON data, in the draft's form."""
        return self._document(self._entries, self._patches)

    def _document(self, entries: list[AnyEntry], patches: list[tuple[int, AnyEntry]]) -> Any:
        if self.form == "list":
            return [entry_to_json(e) for e in entries]
        return {"patches": [{"at": at, "entry": entry_to_json(e)} for at, e in patches]}

    def render(self) -> str:
        """The file text: 2-space JSON with a trailing newline."""
        if self._rendered is None:
            with gc_paused():
                self._rendered = render_document(self.document())
        return self._rendered

    @property
    def dirty(self) -> bool:
        """True when the draft differs from what was loaded or last saved."""
        if self._saved_text is None:
            self._saved_text = render_document(self._document(*self._saved_state))
        return self.render() != self._saved_text

    def validate(self) -> Sidecar:
        """Check the rendered document exactly as a load would, and that every unfinished call
        is decided; raises SidecarError."""
        return self._check(self.render())

    def _check(self, text: str) -> Sidecar:
        if self._undecided:
            raise self._undecided_error()
        sidecar = parse_sidecar_text(text, str(self.path), generations=self.generations)
        if sidecar.form == "patches":
            apply_sidecar(self.derived, sidecar)
        return sidecar

    def _validated_text(self) -> str:
        text = self.render()
        self._check(text)
        return text

    def _undecided_error(self) -> SidecarError:
        calls = []
        for i, item in sorted(self._undecided.items()):
            lines = f", log lines {item.lines[0]}-{item.lines[1]}" if item.lines else ""
            calls.append(f"call #{i} (model call {item.call_key}{lines})")
        first = min(self._undecided)
        return SidecarError(
            f"{self.path}: not saved: {', '.join(calls)} of the primary log never finished "
            f"while recorded and {'is' if len(calls) == 1 else 'are'} not decided yet. Make each "
            "one throw or hang (e.g. dsh-replay override "
            f"SCENARIO --at {first} --throw MESSAGE --code CODE, or --hang), or give it chunks "
            "that end with a finish chunk.",
            file=str(self.path), location=f"call {first}", code=UNDECIDED_CALL)

    def save(self, *, rename: Rename | None = None) -> SavedSidecar:
        """Validate, keep the old file as ``.bak``, write atomically; refuses to clobber edits
        (see :func:`write_sidecar`)."""
        text = self._validated_text()
        saved = write_sidecar(self.path, text, self._base_digest, rename=rename)
        self._base_digest = saved.sha256
        self._saved_state = (list(self._entries), list(self._patches))
        self._saved_text = text
        return saved
