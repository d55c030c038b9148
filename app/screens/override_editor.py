"""The override editor: author ``replay.override.json`` for one primary call, preview, save.

Pushed over the debugger with ``o`` on a selected primary call, or with
:meth:`OverrideEditorScreen.for_directory` on a scenario that does not load because a
primary call never finished (it then opens on the first such call). A sidecar that does not
load opens as text beside its problems (:class:`RawSidecarPane`). Dismisses True once it
saved (``saved`` then says exactly what was written, so the app's file watcher can recognise
its own write), False when closed without saving.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Static, TextArea

from replay_engine import (
    EntryProblem,
    InputError,
    OverrideDraft,
    Rename,
    ReplayError,
    SavedSidecar,
    Scenario,
    SidecarError,
    open_draft,
    open_raw_sidecar,
)

from ..headless import override_edits as edits
from ..headless.override_edits import CHILD_NOTE, EDITOR_HELP, RAW_HELP, EditOutcome
from ..keymap import EDITOR_KEYS, EDITOR_KIND_KEYS, bindings
from ..widgets.kind_toggle import KindToggle
from ..widgets.override_form import OverrideForm
from ..widgets.override_preview import OverridePreview
from ..widgets.raw_sidecar import RawSidecarPane
from .override_confirm import ConfirmDiscardScreen
from .override_editor_css import EDITOR_CSS


class OverrideEditorScreen(ModalScreen[bool]):
    """A kind switch and its fields, the entry JSON, append, remove, the preview and save."""

    DEFAULT_CSS = EDITOR_CSS
    BINDINGS = bindings(EDITOR_KEYS)
    HELP_KEYS = EDITOR_KEYS + EDITOR_KIND_KEYS
    """What the help screen and the palette list over the editor."""
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (140, "-wide")]

    def __init__(
        self,
        scenario: Scenario | None,
        call_index: int | None,
        served_prefix: int | None = None,
        *,
        script_index: int = 0,
        rename: Rename | None = None,
        directory: Path | None = None,
    ) -> None:
        super().__init__()
        if scenario is None and directory is None:
            raise ValueError("give the loaded scenario or the scenario directory")
        self.scenario = scenario
        self.directory = directory
        self.index = call_index if call_index is not None else 0
        self._opened_at = self.index
        self._pick_first_undecided = call_index is None
        self.served_prefix = served_prefix
        scripts = scenario.scripts if scenario is not None else []
        self.is_child = scenario is not None and not (
            0 <= script_index < len(scripts) and scripts[script_index].primary)
        self.draft: OverrideDraft | None = None
        self.raw: RawSidecarPane | None = None
        """The sidecar as text, when it does not load (the form is not shown then)."""
        self.saved: SavedSidecar | None = None
        """What the last save wrote (None until it saved)."""
        self.ready = asyncio.Event()
        """Set once the draft is loaded (or failed to load) and the panes show it."""
        self._rename = rename
        self._saving = False

    @classmethod
    def for_directory(cls, directory: str | Path, call_index: int | None = None, *,
                      rename: Rename | None = None) -> OverrideEditorScreen:
        """The editor for a scenario directory that need not load, e.g. one whose primary call
        never finished; without ``call_index`` it opens on the first call still to decide."""
        return cls(None, call_index, rename=rename, directory=Path(directory))

    def _open_draft(self) -> OverrideDraft:
        if self.scenario is not None:
            return OverrideDraft.open(self.scenario)
        assert self.directory is not None
        try:
            return open_draft(self.directory)
        except OSError as exc:
            raise InputError(f"{exc.filename or self.directory}: cannot read the scenario "
                             f"({exc.strerror or exc}).", file=str(self.directory)) from None

    @property
    def HELP_NOTE(self) -> str:  # noqa: N802 - the name the help screen reads
        """The note under the keys in the help (F1): what the kinds do, or how raw mode works."""
        return RAW_HELP if self.raw is not None else EDITOR_HELP

    @property
    def form(self) -> OverrideForm:
        """The kind switch, its fields and the entry JSON of the call edited."""
        return self.query_one(OverrideForm)

    @property
    def sidecar_name(self) -> str:
        """The file this editor writes, as the quit question names it."""
        if self.draft is not None:
            return self.draft.path.name
        return self.raw.raw.path.name if self.raw is not None else "the override"

    # -- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        # Textual sets the breakpoint class on the first resize, after the first paint: set it
        # now, so the first paint is already the final layout (frames or none).
        width = self.app.size.width
        self.add_class([name for at, name in self.HORIZONTAL_BREAKPOINTS if width >= at][-1])
        with Vertical(id="oe-root"):
            yield Static(id="oe-title")
            if self.is_child:
                yield Static(CHILD_NOTE, id="oe-child")
            else:
                with Horizontal(id="oe-body"):
                    yield OverrideForm(self.index, id="oe-form")
                    yield OverridePreview(id="oe-preview")
            yield Static(id="oe-status")
            with Horizontal(id="oe-actions"):
                if not self.is_child:
                    yield Button("Save ^s", variant="primary", id="oe-save", compact=True)
                yield Button("Close Esc", id="oe-close", compact=True)
        yield Footer(compact=True)

    async def on_mount(self) -> None:
        if self.is_child:
            self._set_title("Override editor")
            self.query_one("#oe-close", Button).focus()
            self.ready.set()
            return
        try:
            self.draft = await asyncio.to_thread(self._open_draft)
        except SidecarError as exc:
            await self._open_raw(exc)
            self.ready.set()
            return
        except ReplayError as exc:
            self._cannot_edit(exc)
            self.ready.set()
            return
        length = len(self.draft.effective())
        undecided = sorted(self.draft.undecided)
        if self._pick_first_undecided and undecided:
            self.index = self._opened_at = undecided[0]
        self._select(min(max(self.index, 0), max(length - 1, 0)))
        if undecided:
            self._say(edits.undecided_note(self.draft), error=True)
        elif self.draft.form == "list":
            self._say("This sidecar is a bare list that replaces the primary script; edits apply "
                      "to its entries and Remove deletes an entry.")
        else:
            self._say("")
        self.form.query_one(KindToggle).focus()
        self.ready.set()

    def _cannot_edit(self, error: ReplayError) -> None:
        self._set_title("Override editor — the sidecar cannot be edited")
        self._say(error.message, error=True)
        self.query_one("#oe-body").display = False
        self.query_one("#oe-save", Button).disabled = True
        self.query_one("#oe-close", Button).focus()

    async def _open_raw(self, error: SidecarError) -> None:
        """Show the sidecar as text beside its problems (it does not load as it is)."""
        source = self.scenario if self.scenario is not None else self.directory
        assert source is not None
        try:
            raw = await asyncio.to_thread(open_raw_sidecar, source)
            problems = await asyncio.to_thread(raw.problems, raw.text)
        except ReplayError:
            problems = []
        if not problems:  # the sidecar itself is fine: something else stops the editor
            self._cannot_edit(error)
            return
        self.raw = RawSidecarPane(raw, problems, id="oe-raw")
        await self.query_one("#oe-body").remove()
        await self.query_one("#oe-root", Vertical).mount(self.raw, before="#oe-status")
        self._set_title(f"{raw.path} does not load: fix it as text — every problem is listed, "
                        "^s saves once none is left")
        self._say(raw.read_problem or "", error=raw.read_problem is not None)
        self._raw_checked(problems)
        self.raw.query_one(TextArea).focus()

    # -- state ----------------------------------------------------------------------------

    @property
    def has_unsaved_changes(self) -> bool:
        """True when closing now would lose edits (draft changes, a form or entry JSON not yet
        valid, or a broken sidecar's text changed)."""
        if self.raw is not None:
            return self.raw.has_unsaved_changes
        return self.draft is not None and (self.draft.dirty or self.form.error is not None)

    def _set_title(self, text: str) -> None:
        self.query_one("#oe-title", Static).update(Text(text, style="bold"))

    def _say(self, text: str, *, error: bool = False) -> None:
        status = self.query_one("#oe-status", Static)
        status.update(Text(text))
        status.set_class(error, "error")
        status.display = bool(text)

    def _refresh(self) -> None:
        draft = self.draft
        assert draft is not None
        flags = " • unsaved changes" if self.has_unsaved_changes else ""
        undecided = draft.undecided
        if undecided:
            flags += f" • {len(undecided)} unfinished call(s) to decide"
            if self.index in undecided:
                flags += " (this one never finished)"
        wide = self.app.size.width >= self.HORIZONTAL_BREAKPOINTS[-1][0]
        path = draft.path if wide else draft.path.name
        self._set_title(f"Override call #{self.index} — {path} ({draft.form} form){flags}")
        self.query_one(OverridePreview).show(draft.compare(), self.index)

    def _select(self, index: int) -> None:
        """Edit call ``index``: its kind, fields and entry JSON as the draft serves it."""
        draft = self.draft
        assert draft is not None
        self.index = index
        served = self.served_prefix if index == self._opened_at and self.served_prefix else None
        self.form.show_call(draft, index, served if served is not None else draft.default_prefix(index))
        self._refresh()

    # -- events ---------------------------------------------------------------------------

    def on_override_form_changed(self, event: OverrideForm.Changed) -> None:
        event.stop()
        if self.draft is None:
            return
        if event.said is not None:
            self._say(event.said)
        self._refresh()

    def on_input_changed(self, event: Input.Changed) -> None:
        if self.draft is None or event.input.id != "oe-index":
            return
        event.stop()
        if event.value != event.input.value:
            return  # stale: the box was set again since (e.g. by ``_select``)
        length = len(self.draft.effective())
        try:
            index = int(event.value)
        except ValueError:
            return
        if index == self.index:
            return
        if not 0 <= index < length:
            self._say(f"call {index} does not exist: the effective script has {length} call(s) "
                      f"(0..{length - 1}); Append call adds one.", error=True)
            return
        if self.form.error is not None:
            self._say(f"Fix or revert this call first ({self.form.error[1]}), then switch calls.",
                      error=True)
            event.input.value = str(self.index)
            return
        self._say("")
        self._select(index)

    def on_raw_sidecar_pane_checked(self, event: RawSidecarPane.Checked) -> None:
        self._raw_checked(event.problems)

    def _raw_checked(self, problems: list[EntryProblem]) -> None:
        self.query_one("#oe-save", Button).disabled = bool(problems)

    async def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        handlers = {"oe-append": self._append, "oe-remove": self._remove}
        if event.button.id in handlers:
            handlers[event.button.id]()
        elif event.button.id == "oe-save":
            await self.action_save()
        elif event.button.id == "oe-close":
            self.action_close()

    def _run(self, edit: Callable[[OverrideDraft], EditOutcome]) -> None:
        """Apply one button's edit to the draft, then show the call it leaves selected."""
        draft = self.draft
        if draft is None:
            return
        if self.form.error is not None:
            self._say(f"Fix or revert this call first: {self.form.error[1]}", error=True)
            return
        outcome = edit(draft)
        if outcome.error:
            self._say(outcome.message, error=True)
            return
        self._select(outcome.select)
        self._say(outcome.message)

    def _append(self) -> None:
        self._run(lambda draft: edits.append_copy(draft, self.index))

    def _remove(self) -> None:
        self._run(lambda draft: edits.remove_at(draft, self.index))

    # -- actions --------------------------------------------------------------------------

    async def action_save(self) -> None:
        """Validate and write the sidecar atomically; never writes an invalid document."""
        if self._saving or (self.draft is None and self.raw is None):
            return
        if self.raw is None and self.form.error is not None:
            source, problem = self.form.error
            what = "the entry JSON is invalid" if source == "json" else "the form is not complete"
            self._say(f"Not saved: {what} — {problem}", error=True)
            return
        self._saving = True
        try:
            if self.raw is not None:
                saved = await self.raw.save(self._rename)
            else:
                assert self.draft is not None
                saved = await asyncio.to_thread(self.draft.save, rename=self._rename)
        except ReplayError as exc:
            self._say("Not saved: " + exc.message, error=True)
            return
        except OSError as exc:
            self._say(f"Not saved: cannot write {self.sidecar_name} ({exc.strerror or exc}); the "
                      "file on disk is unchanged.", error=True)
            return
        finally:
            self._saving = False
        self.saved = saved
        self.dismiss(True)

    async def action_help(self) -> None:
        """Show the editor's keys and what each kind does."""
        await self.app.run_action("help")

    def action_close(self) -> None:
        """Close; asks first when there are unsaved changes."""
        if not self.has_unsaved_changes:
            self.dismiss(False)
            return

        def answered(discard: bool | None) -> None:
            if discard:
                self.dismiss(False)

        self.app.push_screen(ConfirmDiscardScreen(self.sidecar_name), answered)
