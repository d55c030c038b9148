"""The override editor: author ``replay.override.json`` for one primary call, preview, save.

Pushed over the debugger with ``o`` on a selected primary call, or with
:meth:`OverrideEditorScreen.for_directory` on a scenario that does not load because a
primary call never finished (it then opens on the first such call). Dismisses True
once it saved (``saved`` then says exactly what was written, so the app's file
watcher can recognise its own write), False when closed without saving.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Static, TextArea

from replay_engine import (
    AnyEntry,
    EntryTextError,
    InputError,
    OverrideDraft,
    Rename,
    ReplayError,
    SavedSidecar,
    Scenario,
    SidecarError,
    entry_to_json,
    open_draft,
    parse_entry_text,
)

from ..headless import override_edits as edits
from ..headless.override_edits import CHILD_NOTE, EditOutcome, entry_text, first_problem
from ..keymap import EDITOR_KEYS, bindings
from ..widgets.override_preview import OverridePreview
from .override_confirm import ConfirmDiscardScreen


class OverrideEditorScreen(ModalScreen[bool]):
    """Throw here, hang here, edit the entry JSON, append, remove, preview and save."""

    DEFAULT_CSS = """
    OverrideEditorScreen { align: center middle; }
    #oe-root { width: 100%; height: 1fr; border: thick $primary; background: $surface; }
    #oe-title { height: auto; max-height: 3; padding: 0 1; background: $panel; }
    #oe-body { height: 1fr; }
    #oe-form { width: 2fr; min-width: 40; padding: 0 1; }
    #oe-preview { width: 3fr; }
    .oe-row { height: auto; }
    .oe-row Input { width: 1fr; }
    .oe-head { margin-top: 1; text-style: bold; width: 100%; height: auto; }
    #oe-index, #oe-prefix { width: 8; }
    #oe-json { height: 1fr; min-height: 6; }
    #oe-json-status { height: auto; max-height: 4; }
    #oe-json-status.invalid { color: $error; }
    #oe-status { height: auto; max-height: 5; padding: 0 1; }
    #oe-status.error { color: $error; text-style: bold; }
    #oe-actions { height: auto; padding: 0 1; }
    #oe-actions Button, .oe-row Button { margin-left: 1; }
    Label { width: auto; margin-right: 1; }
    #oe-form Input { background: $boost; }
    /* Narrow or short terminals: the form scrolls, the preview goes below it, labels wrap. */
    OverrideEditorScreen.-narrow #oe-body { layout: vertical; }
    OverrideEditorScreen.-narrow #oe-form { width: 100%; height: 3fr; min-width: 0; }
    OverrideEditorScreen.-narrow #oe-preview { width: 100%; height: 2fr; min-height: 6; }
    OverrideEditorScreen.-narrow .oe-head { margin-top: 0; }
    OverrideEditorScreen.-narrow #oe-json { height: 8; }
    """

    BINDINGS = bindings(EDITOR_KEYS)
    HELP_KEYS = EDITOR_KEYS
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
        self._pick_first_undecided = call_index is None
        self.served_prefix = served_prefix
        scripts = scenario.scripts if scenario is not None else []
        self.is_child = scenario is not None and not (
            0 <= script_index < len(scripts) and scripts[script_index].primary)
        self.draft: OverrideDraft | None = None
        self.saved: SavedSidecar | None = None
        """What the last save wrote (None until it saved)."""
        self.ready = asyncio.Event()
        """Set once the draft is loaded (or failed to load) and the panes show it."""
        self._rename = rename
        self._json_error: EntryTextError | None = None
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

    # -- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Vertical(id="oe-root"):
            yield Static(id="oe-title")
            if self.is_child:
                yield Static(CHILD_NOTE, id="oe-child")
            else:
                with Horizontal(id="oe-body"):
                    with VerticalScroll(id="oe-form"):
                        with Horizontal(classes="oe-row"):
                            yield Label("call #")
                            yield Input(str(self.index), type="integer", id="oe-index", compact=True)
                        yield Label("Throw here", classes="oe-head")
                        yield Input(placeholder="message", id="oe-message", compact=True)
                        yield Input(placeholder="code (AUTH, RATE_LIMIT, SERVER, HTTP_503…)",
                                    id="oe-code", compact=True)
                        with Horizontal(classes="oe-row"):
                            yield Label("keep first")
                            yield Input(str(self.served_prefix or 0), type="integer",
                                        id="oe-prefix", compact=True)
                            yield Label("recorded chunk(s)")
                            yield Button("Throw here", id="oe-throw", compact=True)
                        yield Label("Hang here", classes="oe-head")
                        with Horizontal(classes="oe-row"):
                            yield Input(placeholder="readyFile (optional)", id="oe-ready", compact=True)
                            yield Button("Hang here", id="oe-hang", compact=True)
                        with Horizontal(classes="oe-row"):
                            yield Button("Append call", id="oe-append", compact=True)
                            yield Button("Remove patch", id="oe-remove", compact=True)
                        yield Label("Entry JSON (a chunk list or a whole entry), checked as you "
                                    "type", classes="oe-head")
                        yield TextArea(id="oe-json", soft_wrap=False)
                        yield Static(id="oe-json-status")
                    yield OverridePreview(id="oe-preview")
            yield Static(id="oe-status")
            with Horizontal(id="oe-actions"):
                if not self.is_child:
                    yield Button("Save (ctrl+s)", variant="primary", id="oe-save", compact=True)
                yield Button("Close (esc)", id="oe-close", compact=True)
        yield Footer(compact=True)

    async def on_mount(self) -> None:
        if self.is_child:
            self._set_title("Override editor")
            self.ready.set()
            return
        try:
            self.draft = await asyncio.to_thread(self._open_draft)
        except ReplayError as exc:
            self._set_title("Override editor — the sidecar cannot be edited")
            self._say(exc.message, error=True)
            self.query_one("#oe-body").display = False
            self.query_one("#oe-save", Button).disabled = True
            self.ready.set()
            return
        length = len(self.draft.effective())
        undecided = sorted(self.draft.undecided)
        if self._pick_first_undecided and undecided:
            self.index = undecided[0]
        self._select(min(max(self.index, 0), max(length - 1, 0)))
        if undecided:
            self._say(self._undecided_note(), error=True)
        elif self.draft.form == "list":
            self._say("This sidecar is a bare list that replaces the primary script; edits apply "
                      "to its entries and Remove deletes an entry.")
        self.ready.set()

    # -- state ----------------------------------------------------------------------------

    @property
    def has_unsaved_changes(self) -> bool:
        """True when closing now would lose edits (draft changes or entry JSON not yet valid)."""
        return self.draft is not None and (self.draft.dirty or self._json_error is not None)

    def _undecided_note(self) -> str:
        """What the user must do before saving a draft whose log has calls that never finished."""
        assert self.draft is not None
        undecided = self.draft.undecided
        calls = ", ".join(f"#{i} ({e.call_key})" for i, e in sorted(undecided.items()))
        return (f"Call(s) {calls} never finished while recorded, so the scenario cannot load "
                "until each is decided: Throw here (keeps what was streamed by default), Hang "
                "here, or give it chunks ending with a finish. The sidecar is saved as a bare "
                "list: every other call as recorded.")

    def _set_title(self, text: str) -> None:
        self.query_one("#oe-title", Static).update(Text(text, style="bold"))

    def _say(self, text: str, *, error: bool = False) -> None:
        status = self.query_one("#oe-status", Static)
        status.update(Text(text))
        status.set_class(error, "error")

    def _refresh(self) -> None:
        draft = self.draft
        assert draft is not None
        unsaved = " • unsaved changes" if self.has_unsaved_changes else ""
        undecided = draft.undecided
        if undecided:
            unsaved += f" • {len(undecided)} unfinished call(s) to decide"
            if self.index in undecided:
                unsaved += " (this one never finished)"
        self._set_title(f"Override call #{self.index} of the primary session — {draft.path} "
                        f"({draft.form} form){unsaved}")
        self.query_one(OverridePreview).show(draft.compare(), self.index)

    def _select(self, index: int) -> None:
        """Edit call ``index``: show its effective entry in the JSON pane."""
        assert self.draft is not None
        self.index = index
        box = self.query_one("#oe-index", Input)
        if box.value != str(index):
            box.value = str(index)
        self.query_one("#oe-json", TextArea).load_text(entry_text(self.draft.entry_at(index)))
        if index in self.draft.undecided:
            self.query_one("#oe-prefix", Input).value = str(self.draft.default_prefix(index))
        self._json_status(None)
        self._refresh()

    def _json_status(self, error: EntryTextError | None) -> None:
        self._json_error = error
        status = self.query_one("#oe-json-status", Static)
        status.set_class(error is not None, "invalid")
        status.update(Text("✗ " + first_problem(error)) if error is not None
                      else Text("✓ valid entry", style="green"))

    def _apply_entry(self, entry: AnyEntry) -> bool:
        """Serve ``entry`` at the selected call (typing the recorded entry back drops the patch);
        False when the draft already serves exactly that."""
        draft = self.draft
        assert draft is not None
        current = draft.entry_at(self.index)
        if current is not None and entry_to_json(current) == entry_to_json(entry):
            return False
        derived = draft.derived
        if (draft.form == "patches" and derived is not None and self.index < len(derived)
                and entry_to_json(derived[self.index].entry) == entry_to_json(entry)):
            draft.remove(self.index)
        else:
            draft.put(self.index, entry)
        return True

    # -- events ---------------------------------------------------------------------------

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        event.stop()
        if self.draft is None:
            return
        text = event.text_area.text
        if not text.strip() and self.draft.entry_at(self.index) is None:
            self._json_status(None)
            return
        was_valid = self._json_error is None
        changed = False
        try:
            changed = self._apply_entry(parse_entry_text(text, "entry JSON"))
        except EntryTextError as exc:
            self._json_status(exc)
        except SidecarError as exc:
            self._say(first_problem(exc), error=True)
        else:
            self._json_status(None)
        if changed or was_valid != (self._json_error is None):
            self._refresh()  # the preview is redrawn only when something it shows changed

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id != "oe-index" or self.draft is None:
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
        if self._json_error is not None:
            self._say("Fix or revert the entry JSON before switching calls.", error=True)
            event.input.value = str(self.index)
            return
        self._say("")
        self._select(index)

    async def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        handlers = {
            "oe-throw": self._throw, "oe-hang": self._hang, "oe-append": self._append,
            "oe-remove": self._remove,
        }
        if event.button.id in handlers:
            handlers[event.button.id]()
        elif event.button.id == "oe-save":
            await self.action_save()
        elif event.button.id == "oe-close":
            self.action_close()

    def _guarded(self) -> OverrideDraft | None:
        if self.draft is None:
            return None
        if self._json_error is not None:
            self._say("Fix or revert the entry JSON first: " + first_problem(self._json_error),
                      error=True)
            return None
        return self.draft

    def _run(self, edit: Callable[[OverrideDraft], EditOutcome]) -> None:
        """Apply one edit command to the draft, then show the call it leaves selected."""
        draft = self._guarded()
        if draft is None:
            return
        outcome = edit(draft)
        if outcome.error:
            self._say(outcome.message, error=True)
            return
        self._select(outcome.select)
        self._say(outcome.message)

    def _throw(self) -> None:
        self._run(lambda draft: edits.throw_here(
            draft, self.index, self.query_one("#oe-message", Input).value,
            self.query_one("#oe-code", Input).value, self.query_one("#oe-prefix", Input).value))

    def _hang(self) -> None:
        self._run(lambda draft: edits.hang_here(draft, self.index,
                                                self.query_one("#oe-ready", Input).value))

    def _append(self) -> None:
        self._run(lambda draft: edits.append_copy(draft, self.index))

    def _remove(self) -> None:
        self._run(lambda draft: edits.remove_at(draft, self.index))

    # -- actions --------------------------------------------------------------------------

    async def action_save(self) -> None:
        """Validate and write the sidecar atomically; never writes an invalid document."""
        draft = self.draft
        if draft is None or self._saving:
            return
        if self._json_error is not None:
            self._say("Not saved: the entry JSON is invalid — " + first_problem(self._json_error),
                      error=True)
            return
        self._saving = True
        try:
            saved = await asyncio.to_thread(draft.save, rename=self._rename)
        except ReplayError as exc:
            self._say("Not saved: " + exc.message, error=True)
            return
        except OSError as exc:
            self._say(f"Not saved: cannot write {draft.path} ({exc.strerror or exc}); the file on "
                      "disk is unchanged.", error=True)
            return
        finally:
            self._saving = False
        self.saved = saved
        self.dismiss(True)

    async def action_help(self) -> None:
        """Show the editor's keys."""
        await self.app.run_action("help")

    def action_close(self) -> None:
        """Close; asks first when there are unsaved changes."""
        if not self.has_unsaved_changes:
            self.dismiss(False)
            return
        assert self.draft is not None

        def answered(discard: bool | None) -> None:
            if discard:
                self.dismiss(False)

        self.app.push_screen(ConfirmDiscardScreen(self.draft.path.name), answered)
