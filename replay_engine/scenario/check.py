"""Check a scenario without serving it: every problem of every file, and the warnings.

What ``dsh-replay validate`` runs. The logs are checked as the loader reads them (the same
errors) without keeping their chunks, and pydantic is imported only for a sidecar.
"""

from __future__ import annotations

import os

from ..errors import UNFINISHED_CALL, DerivationError, ReplayError
from .callkeys import child_unfinished_error
from .layout import generation_of, missing_primary_error, scenario_layout
from .logcheck import check_log, check_log_bytes
from .persisted import find_persisted, read_persisted


def validate_scenario(path: str) -> list[str]:
    """Every problem found in a scenario (empty when it loads and is servable)."""
    return check_scenario(path)[0]


def check_scenario(path: str) -> tuple[list[str], list[str]]:
    """Every problem found in a scenario, and the warnings: what the scenario format (docs/format.md) accepts
    but a newer harness refuses (a non-object line, a non-number seq or time).

    Each file is checked on its own so one bad file does not hide the others. The logs are
    checked as the loader reads them (the same errors) without keeping their chunks, and
    without the models unless a sidecar is there to validate.
    """
    try:
        return _check_scenario(path)
    except ReplayError as exc:
        return [exc.message], []
    except OSError as exc:  # a file that vanished or turned unreadable while being checked
        return [f"{exc.filename or path}: cannot read ({exc.strerror or exc})"], []


def _check_scenario(path: str) -> tuple[list[str], list[str]]:
    persisted = find_persisted(path)
    if persisted is not None:
        found = read_persisted(persisted)
        try:
            check_log_bytes(found.data, str(persisted), generation=found.generation,
                            warnings=found.warnings)
        except ReplayError as exc:
            return [exc.message], found.warnings
        return [], found.warnings
    layout = scenario_layout(path)
    primary, sidecar, children = layout.primary, layout.sidecar, layout.children
    problems: list[str] = []
    warnings: list[str] = []
    has_sidecar = os.path.lexists(sidecar)
    replaces = False
    if has_sidecar:
        from .sidecar import sidecar_is_bare_list

        replaces = sidecar_is_bare_list(sidecar)
    derived_length: int | None = None
    if os.path.lexists(primary):
        try:
            if replaces and generation_of(primary) < 2:
                from .loading import read_header

                read_header(primary)  # a replacement never reads the primary's events
            else:  # a v2+ primary is checked whole; under a list, unfinished calls are fine
                derived_length = check_log(primary, warnings=warnings, lenient=replaces).calls
        except ReplayError as exc:
            problems.append(exc.message)
    for child in children:
        try:
            check_log(child, seed_length=True, warnings=warnings)
        except DerivationError as exc:
            unfinished = exc.code == UNFINISHED_CALL
            problems.append((child_unfinished_error(exc) if unfinished else exc).message)
        except ReplayError as exc:
            problems.append(exc.message)
    if has_sidecar:
        from .sidecar import load_sidecar

        try:
            load_sidecar(sidecar, derived_length=derived_length,
                         generations=layout.by_generation)
        except ReplayError as exc:
            problems.append(exc.message)
    if not os.path.lexists(primary) and not replaces:
        problems.append(missing_primary_error(str(primary), str(primary)).message)
    return problems, warnings
