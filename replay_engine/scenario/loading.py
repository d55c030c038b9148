"""Load a scenario: a directory (docs/format.md#scenario-directory) or the DSH_SNAPSHOT_* variables."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import (
    UNFINISHED_CALL,
    DerivationError,
    InputError,
    ReplayError,
    ScenarioNotFoundError,
    SidecarError,
)
from ..models import LogContext, ReplayConfig, ScriptEntry, SessionHeader, SessionScript
from .callkeys import child_unfinished_error
from .derive_fast import LoadedLog, derive_log_bytes, load_log
from .layout import ScenarioLayout, check_generation, generation_of, scenario_layout
from .layout import missing_primary_error as _missing_primary_error
from .logs import decode_line, ensure_log_file, header_from_value, unreadable_log_error
from .persisted import persisted_selection, read_persisted
from .sidecar import (
    Sidecar,
    SidecarForm,
    apply_sidecar,
    load_sidecar,
    sidecar_is_bare_list,
)

ENV_FILE = "DSH_SNAPSHOT_FILE"
ENV_OVERRIDE = "DSH_SNAPSHOT_OVERRIDE"
ENV_CHILDREN = "DSH_SNAPSHOT_CHILD_FILES"


@dataclass(slots=True)
class Scenario:
    """Everything loaded from one scenario, ready to serve."""

    scripts: list[SessionScript]
    """Primary first, then children by (createdAt, recorded id)."""
    headers: dict[str, SessionHeader]
    """Each log's header, keyed by file name."""
    config: ReplayConfig
    """Where the files came from."""
    root: Path | None = None
    """The scenario directory, when loaded from one."""
    sidecar_form: SidecarForm | None = None
    """``list`` or ``patches`` when a sidecar was applied."""
    derived_primary: list[ScriptEntry] | None = None
    """The primary script before the sidecar (None when the log is absent)."""
    sidecar: Sidecar | None = None
    """The sidecar applied, as read (the override editor starts from it)."""
    watched: list[Path] = field(default_factory=list)
    """Files whose change should trigger a reload."""
    ignored: list[Path] = field(default_factory=list)
    """Older generations of a role, present beside the selected log and never read."""
    warnings: list[str] = field(default_factory=list)
    """What was wrong but could be read (a persisted session's torn last frame)."""

    def to_json(self, *, with_origin: bool = False) -> dict[str, Any]:
        """The conformance shape: ``{"ok": true, "scripts": [...], "headers": {...}}``."""
        return {
            "ok": True,
            "scripts": [s.to_json(with_origin=with_origin) for s in self.scripts],
            "headers": {name: h.to_json() for name, h in self.headers.items()},
        }


@dataclass(frozen=True, slots=True)
class LoadProgress:
    """How far the first read of a scenario got: the primary's calls derived so far."""

    primary: SessionScript
    """The primary as far as it is derived (header read, sidecar not applied yet)."""
    done: int
    """Bytes of the primary log read."""
    total: int
    """The primary log's size in bytes."""

    def describe(self) -> str:
        """``loading… 23 MB of 100 MB`` (MB of 10^6 bytes)."""
        return f"loading… {self.done / 1e6:.0f} MB of {self.total / 1e6:.0f} MB"


ScenarioProgress = Callable[[LoadProgress], None]
"""Told, from the loading thread, each time another block of the primary log was read."""


def config_from_directory(path: str | Path) -> ReplayConfig:
    """The config a scenario directory stands for."""
    return config_of_layout(scenario_layout(path))


def config_of_layout(layout: ScenarioLayout) -> ReplayConfig:
    """The config of a directory's selected logs."""
    return ReplayConfig(file=str(layout.primary), overrideFile=str(layout.sidecar),
                        childFiles=[str(p) for p in layout.children])


def reads_by_generation(config: ReplayConfig) -> bool:
    """Whether some log the config names carries a generation (``.vK``): its sidecar may then
    use the generations' additions (docs/format.md#v2-scripts-sidecar-headers)."""
    names = [config.file or "", *config.childFiles]
    return any(generation_of(name) >= 1 for name in names)


def config_from_env(env: Mapping[str, str] | None = None) -> ReplayConfig:
    """The config the harness variables stand for (docs/format.md#scenario-directory)."""
    env = os.environ if env is None else env
    children = env.get(ENV_CHILDREN, "")
    return ReplayConfig(
        file=env.get(ENV_FILE) or None,
        overrideFile=env.get(ENV_OVERRIDE) or None,
        childFiles=[p for p in children.split(os.pathsep) if p] if children else [],
    )


def log_present(path: Path) -> bool:
    """Something holds the log's name (a file, or a directory or link that fails to load)."""
    return os.path.lexists(path)


def _read_sidecar(config: ReplayConfig) -> Sidecar | None:
    if not config.overrideFile:
        return None
    path = Path(config.overrideFile)
    if not os.path.lexists(path):
        return None
    return load_sidecar(path, generations=reads_by_generation(config))


def _with_range_problems(config: ReplayConfig, error: SidecarError) -> SidecarError:
    """An invalid patches sidecar, re-checked against the derived primary so that ``at`` values
    past its end are listed with every other problem (the original error if that is impossible)."""
    primary = Path(config.file) if config.file else None
    if primary is None or not primary.is_file() or config.overrideFile is None:
        return error
    path = Path(config.overrideFile)
    if sidecar_is_bare_list(path):
        return error
    try:
        length = len(load_log(primary).entries)
        load_sidecar(path, derived_length=length, generations=reads_by_generation(config))
    except SidecarError as full:
        return full
    except ReplayError:
        return error
    return error


def missing_primary_error(config: ReplayConfig) -> ScenarioNotFoundError:
    """The primary log is absent and no bare-list sidecar replaces its script."""
    return _missing_primary_error(config.file, config.file or f"${ENV_FILE}")


def load_scenario_config(config: ReplayConfig, root: Path | None = None,
                         ignored: list[Path] | None = None, *,
                         progress: ScenarioProgress | None = None) -> Scenario:
    """Load every script a config names, ordered and with the sidecar applied; ``progress``
    is told how far the primary log's derivation got (see ``LoadProgress``)."""
    try:
        scenario = _load_scenario_config(config, root, progress)
        scenario.ignored = list(ignored or [])
        return scenario
    except OSError as exc:  # a file that vanished or turned unreadable while loading
        name = str(exc.filename or config.file or "scenario")
        raise InputError(f"{name}: cannot read ({exc.strerror or exc}); make the scenario's "
                         "files readable regular files.", file=name, code="IO") from None


def _primary_progress(path: Path, progress: ScenarioProgress) -> LoadedLog:
    """Load the primary log, telling ``progress`` its calls as they are derived."""
    try:
        header = read_header(path)
    except ReplayError:  # the full read says what is wrong
        header = SessionHeader()
    file = str(path)

    def told(done: int, total: int, entries: list[ScriptEntry]) -> None:
        primary = SessionScript(recorded_id=header.id, created_at=header.createdAt,
                                entries=entries[:], primary=True, file=file,
                                seed_length=header.seedLength, header=header)
        progress(LoadProgress(primary, done, total))

    return load_log(path, progress=told)


def _load_scenario_config(config: ReplayConfig, root: Path | None,
                          progress: ScenarioProgress | None = None) -> Scenario:
    try:
        sidecar = _read_sidecar(config)
    except SidecarError as exc:
        raise _with_range_problems(config, exc) from None
    primary_path = Path(config.file) if config.file else None
    headers: dict[str, SessionHeader] = {}
    derived: list[ScriptEntry] | None = None
    said: LogContext | None = None
    untimed = 0
    watched: list[Path] = []
    if primary_path is not None:
        watched.append(primary_path)
    if config.overrideFile:
        watched.append(Path(config.overrideFile))
    if primary_path is not None and log_present(primary_path):
        if sidecar is not None and sidecar.form == "list" and generation_of(primary_path) < 2:
            # A replacement never reads a v0/v1 primary's events (docs/format.md#edge-cases): only its header.
            header = read_header(primary_path)
        elif sidecar is not None and sidecar.form == "list":
            # A v2+ primary is read and checked whole, then its derived script is discarded
            # (docs/format.md#v2-scripts-sidecar-headers); a call that never finished is what the list
            # replaces, not an error.
            header = load_log(primary_path, lenient=True).header
        else:
            loaded: LoadedLog = (load_log(primary_path) if progress is None
                                 else _primary_progress(primary_path, progress))
            header, derived = loaded.header, loaded.entries
            untimed, said = loaded.untimed, loaded.said
        headers[primary_path.name] = header
    elif sidecar is None or sidecar.form != "list":
        raise missing_primary_error(config)
    else:
        header = SessionHeader()
    entries = apply_sidecar(derived, sidecar) if sidecar is not None else derived
    assert entries is not None
    primary = SessionScript(
        recorded_id=header.id,
        created_at=header.createdAt,
        entries=entries,
        primary=True,
        file=str(primary_path) if primary_path is not None and log_present(primary_path) else None,
        seed_length=header.seedLength,
        header=header,
        untimed=untimed,
        said=said,
    )
    children: list[SessionScript] = []
    for child in config.childFiles:
        child_path = Path(child)
        if not log_present(child_path):
            raise ScenarioNotFoundError(
                f"{child}: child session log not found; fix the path or remove it from the "
                "child files.",
                file=child,
            )
        watched.append(child_path)
        loaded = load_child_log(child_path)
        headers[child_path.name] = loaded.header
        children.append(
            SessionScript(
                recorded_id=loaded.header.id,
                created_at=loaded.header.createdAt,
                entries=loaded.entries,
                primary=False,
                file=str(child_path),
                seed_length=loaded.header.seedLength,
                header=loaded.header,
                untimed=loaded.untimed,
                said=loaded.said,
            )
        )
    children.sort(key=lambda s: (s.created_at, s.recorded_id))
    return Scenario(
        scripts=[primary, *children],
        headers=headers,
        config=config,
        root=root,
        sidecar_form=sidecar.form if sidecar is not None else None,
        derived_primary=derived,
        sidecar=sidecar,
        watched=watched,
    )


def load_child_log(path: Path) -> LoadedLog:
    """Load a child log from its ``seedLength`` on; an unfinished call says sidecars cannot help."""
    try:
        return load_log(path, seed_length=True)
    except DerivationError as exc:
        if exc.code != UNFINISHED_CALL:
            raise
        raise child_unfinished_error(exc) from None


def read_header(path: Path) -> SessionHeader:
    """Read only the header line of a log."""
    file = str(path)
    ensure_log_file(path, file)
    try:
        with open(path, "rb") as handle:
            for number, raw in enumerate(handle, 1):
                blank, value = decode_line(raw, file, number)
                if not blank:
                    header = header_from_value(value, file, number)
                    check_generation(value, file, generation_of(file), number)
                    return header
    except OSError as exc:
        raise unreadable_log_error(path, file, exc) from None
    return SessionHeader()


def load_scenario(path_or_env: str | Path | Mapping[str, str] | None = None, *,
                  progress: ScenarioProgress | None = None) -> Scenario:
    """Load a scenario directory, or (None / a mapping) the DSH_SNAPSHOT_* variables;
    ``progress`` sees the primary's calls as they are derived (a persisted session: none)."""
    if path_or_env is None or isinstance(path_or_env, Mapping):
        return load_scenario_config(config_from_env(path_or_env), progress=progress)
    root = Path(path_or_env)
    persisted = persisted_selection(root)
    if persisted is not None:
        scenario = load_persisted(persisted[0])
        scenario.ignored = persisted[1]
        return scenario
    layout = scenario_layout(root)
    return load_scenario_config(config_of_layout(layout), root=root, ignored=layout.ignored,
                                progress=progress)


def load_persisted(path: Path) -> Scenario:
    """A persisted session (``session[.vK].jsonl.zstd``) as a one-session scenario."""
    persisted = read_persisted(path)
    loaded = derive_log_bytes(persisted.data, str(path), generation=persisted.generation)
    header = loaded.header
    script = SessionScript(
        recorded_id=header.id, created_at=header.createdAt, entries=loaded.entries,
        primary=True, file=str(path), seed_length=header.seedLength, header=header,
        untimed=loaded.untimed, said=loaded.said)
    config = ReplayConfig(file=str(path), overrideFile=None, childFiles=[])
    return Scenario(scripts=[script], headers={path.name: header}, config=config,
                    root=path.parent, derived_primary=loaded.entries, watched=[path],
                    warnings=persisted.warnings)


def load_session_scripts(config: ReplayConfig) -> list[SessionScript]:
    """The ordered scripts of a config (primary first, then children)."""
    return load_scenario_config(config).scripts


def load_replay_script(config: ReplayConfig) -> list[ScriptEntry]:
    """The primary script only, sidecar applied."""
    return load_scenario_config(config.model_copy(update={"childFiles": []})).scripts[0].entries
