"""Which editor ``E`` runs and on what: ``$VISUAL`` then ``$EDITOR``, the file, and the line to
open it at in the way that editor understands."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

NO_EDITOR = ("Set $VISUAL or $EDITOR to open files from the debugger, e.g. "
             "export EDITOR=vim (or nano, 'emacs -nw', 'code --wait'), then start it again.")

_PLUS_LINE = frozenset({"vi", "vim", "nvim", "view", "gvim", "nano", "pico", "emacs",
                        "emacsclient", "micro", "joe", "jed", "mg", "kak", "ne", "mcedit", "ed"})
"""Editors that open a file at a line given as ``+LINE`` before the file."""
_COLON_LINE = frozenset({"hx", "helix", "subl", "sublime_text", "zed", "mate"})
"""Editors that take ``FILE:LINE``."""
_GOTO_LINE = frozenset({"code", "codium", "code-insiders", "cursor"})
"""Editors that take ``--goto FILE:LINE``."""
_FILE_LINE = re.compile(r"((?:[A-Za-z]:)?[^\s:'\"()]+\.jsonl?):(\d+)")


@dataclass(frozen=True, slots=True)
class EditTarget:
    """A file to open, at a line (1-based) when one is known."""

    path: Path
    line: int | None = None

    def describe(self) -> str:
        """``path`` or ``path:line``, as messages name it."""
        return f"{self.path}:{self.line}" if self.line is not None else str(self.path)


@dataclass(frozen=True, slots=True)
class EditorProblem:
    """Why ``E``'s editor did not end cleanly: ``started`` is False when it never ran (the
    terminal could not be handed over, the program is missing), so there is nothing to
    reload; True when it ran and exited with an error status (the file may have changed)."""

    message: str
    started: bool


def editor_command(env: Mapping[str, str]) -> list[str] | None:
    """The editor command the environment names (``$VISUAL`` first), split like a shell would;
    None when neither is set."""
    for name in ("VISUAL", "EDITOR"):
        value = env.get(name, "").strip()
        if value:
            try:
                words = shlex.split(value)
            except ValueError:
                words = value.split()
            if words:
                return words
    return None


def editor_argv(command: list[str], target: EditTarget) -> list[str]:
    """``command`` opening ``target``, at its line when the editor is one that takes one."""
    name = Path(command[0]).name.removesuffix(".exe")
    path = str(target.path)
    if target.line is None:
        return [*command, path]
    if name in _PLUS_LINE:
        return [*command, f"+{target.line}", path]
    if name in _COLON_LINE:
        return [*command, f"{path}:{target.line}"]
    if name in _GOTO_LINE:
        return [*command, "--goto", f"{path}:{target.line}"]
    return [*command, path]


def named_file_line(text: str, base: Path) -> EditTarget | None:
    """The first ``FILE:LINE`` an event-log line names (a ``.json`` or ``.jsonl`` file that
    exists, relative paths from ``base``), or None."""
    for match in _FILE_LINE.finditer(text):
        path = Path(match.group(1))
        if not path.is_absolute():
            path = base / path
        if path.is_file():
            return EditTarget(path, int(match.group(2)))
    return None
