"""Author a sidecar for a primary log whose call never finished (the stream threw while recording).

Strict loading refuses such a log (``UNFINISHED_CALL``) and a patches sidecar cannot help,
because derivation fails before patches apply. So the draft is a bare list over the leniently
derived primary script: every finished call as recorded, each unfinished one a slot that must
be decided (throw, hang or chunks) before the draft can be saved.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import OVERRIDE_EDIT, UNFINISHED_CALL, ConfigError, DerivationError
from ..models import AnyEntry, ReplayConfig, ScriptEntry, SessionHeader
from ..scenario.derive_fast import load_log
from ..scenario.layout import PRIMARY_NAME
from ..scenario.loading import config_from_directory, load_scenario, reads_by_generation
from ..scenario.sidecar import SIDECAR_NAME, apply_sidecar
from .compare import read_sidecar_file
from .draft import OverrideDraft, no_sidecar_error

__all__ = ["AuthoringPrimary", "load_primary_for_authoring", "open_draft", "open_unfinished_draft"]


@dataclass(slots=True)
class AuthoringPrimary:
    """A primary log derived leniently: unfinished calls kept as chunks entries, and listed."""

    header: SessionHeader
    entries: list[ScriptEntry]
    """Every call in log order; an unfinished one holds the chunks recorded before it broke."""
    unfinished: list[int]
    """Indices in ``entries`` of the calls without a finish chunk."""


def load_primary_for_authoring(path: str | Path, name: str | None = None) -> AuthoringPrimary:
    """Derive a primary log like ``load_log`` does (the same reading, every generation),
    keeping unfinished calls instead of failing."""
    loaded = load_log(path, name=name, lenient=True)
    return AuthoringPrimary(loaded.header, loaded.entries, list(loaded.unfinished))


def _describe(primary: AuthoringPrimary, file: str) -> str:
    calls = ", ".join(
        f"#{i} (model call {primary.entries[i].call_key})" for i in primary.unfinished
    )
    return (
        f"{file}: call(s) {calls} never finished while recorded, so the scenario cannot load "
        f"without a bare-list {SIDECAR_NAME}. Decide each one (throw, hang, or chunks ending "
        "with a finish chunk); every other call is kept as recorded."
    )


def open_unfinished_draft(config: ReplayConfig) -> OverrideDraft:
    """A bare-list draft over the leniently derived primary; its unfinished calls are undecided.

    A valid patches sidecar already on disk is applied first (a patched unfinished call counts
    as decided) and is rewritten as a bare list on save, the old file kept as ``.bak``.
    """
    if not config.overrideFile:
        raise no_sidecar_error(config)
    if not config.file or not Path(config.file).is_file():
        raise ConfigError(
            f"{config.file or PRIMARY_NAME}: the primary session log is missing, so there is no "
            "recorded call to decide.", file=config.file, code=OVERRIDE_EDIT,
        )
    path = Path(config.overrideFile)
    generations = reads_by_generation(config)
    sidecar, digest = read_sidecar_file(path, generations=generations)
    primary = load_primary_for_authoring(Path(config.file))
    derived = primary.entries
    undecided = {i: derived[i] for i in primary.unfinished}
    note = _describe(primary, config.file) if primary.unfinished else None
    entries: list[AnyEntry]
    if sidecar is None:
        entries = [item.entry for item in derived]
    elif sidecar.form == "list":
        entries, undecided = list(sidecar.entries), {}
    else:
        entries = [item.entry for item in apply_sidecar(derived, sidecar)]
        patched = {at for at, _ in sidecar.patches}
        undecided = {i: item for i, item in undecided.items() if i not in patched}
        note = (note or "") + (f" The patches in {path.name} are kept and the file is saved as "
                               "a bare list (a patches sidecar cannot apply to this log).")
    draft = OverrideDraft(path, "list", derived, entries=entries, base_digest=digest,
                          derived_note=note, undecided=undecided, generations=generations)
    draft.unfinished = tuple(primary.unfinished)  # patched ones too: they explain the list form
    return draft


def open_draft(directory: str | Path) -> OverrideDraft:
    """The sidecar draft of a scenario directory, also when its primary has an unfinished call."""
    root = Path(directory)
    try:
        scenario = load_scenario(root)
    except DerivationError as exc:
        config = config_from_directory(root)
        if exc.code != UNFINISHED_CALL or exc.file is None or config.file is None or (
                Path(exc.file) != Path(config.file)):
            raise
        return open_unfinished_draft(config)
    return OverrideDraft.open(scenario)
