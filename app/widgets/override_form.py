"""The override editor's form for one call: the kind switch and its fields, and the entry JSON.

The two are views of one entry: a change of the switch or a field rewrites the JSON, valid JSON
typed in the box fills the switch and the fields, and every valid change is served by the draft
at once, so what the editor shows is what it saves.
"""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.suggester import SuggestFromList
from textual.widgets import Button, Input, Label, Static, TextArea

from replay_engine import STATUS_BY_CODE, EntryTextError, OverrideDraft, SidecarError, parse_entry_text

from ..headless import override_edits as edits
from ..headless.override_edits import KINDS, FormValues, Kind, entry_text, first_problem, form_of
from .kind_toggle import KindToggle

FORM_INPUTS = ("oe-message", "oe-code", "oe-prefix", "oe-ready")
"""The inputs of the kinds' fields (the call number is not part of the entry)."""
Error = tuple[str, str]
"""Why the entry shown cannot be served: (``form`` or ``json``: which view says so, the text)."""


class OverrideForm(Vertical):
    """Edits the entry of one call of a draft; posts :class:`OverrideForm.Changed` after each
    change it served (or could not serve)."""

    class Changed(Message):
        """The draft or the form's validity changed; ``said`` describes the call when valid."""

        def __init__(self, said: str | None) -> None:
            super().__init__()
            self.said = said

    def __init__(self, index: int, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.draft: OverrideDraft | None = None
        self.index = index
        self.error: Error | None = None
        """Why the entry shown is not served (None: the draft serves it)."""
        self._recorded: list[dict[str, Any]] = []
        """The chunks a throw of the call keeps a prefix of."""
        self._shown = FormValues()
        """The form as last filled or applied: an equal form is an echo, not an edit."""
        self._loaded: str | None = None
        """The entry JSON as last put in the box by the form (an equal text is no edit)."""

    def compose(self) -> ComposeResult:
        with Horizontal(classes="oe-row"):
            yield Label("kind")
            yield KindToggle(id="oe-kind")
            yield Label("call #", classes="oe-after")
            yield Input(str(self.index), type="integer", id="oe-index", compact=True)
            yield Button("Append call", id="oe-append", compact=True)
            yield Button("Remove patch", id="oe-remove", compact=True)
        with Horizontal(classes="oe-row oe-throw"):
            yield Label("message")
            yield Input(placeholder="what the agent sees", id="oe-message", compact=True)
            yield Label("code", classes="oe-after")
            yield Input(placeholder="RATE_LIMIT, HTTP_503…", id="oe-code", compact=True,
                        suggester=SuggestFromList(list(STATUS_BY_CODE), case_sensitive=False))
        with Horizontal(classes="oe-row oe-throw"):
            yield Label("keep first")
            yield Input("0", type="integer", id="oe-prefix", compact=True)
            yield Label("", id="oe-prefix-of", classes="oe-after")
        with Horizontal(classes="oe-row oe-hang"):
            yield Label("readyFile")
            yield Input(placeholder="optional: created once the call waits", id="oe-ready",
                        compact=True)
        yield Static("Streams the chunks in the entry JSON below; edit them, or pick throw or "
                     "hang.", classes="oe-chunks oe-hint")
        area = TextArea(id="oe-json", soft_wrap=False)
        area.border_title = "entry JSON (a chunk list or a whole entry)"
        yield area
        yield Static(id="oe-json-status")

    def on_mount(self) -> None:
        # The fields of a kind show the moment it is picked, before the next key is read:
        # a Tab typed right after "t" then reaches the throw's message.
        self.watch(self.query_one(KindToggle), "kind", self._show_fields, init=False)

    def show_call(self, draft: OverrideDraft, index: int, prefix: int) -> None:
        """Edit call ``index`` of ``draft``: its kind, fields and entry JSON as the draft serves
        it (``prefix``: what a new throw keeps by default)."""
        self.draft, self.index = draft, index
        box = self.query_one("#oe-index", Input)
        if box.value != str(index):
            box.value = str(index)
        self._recorded = list(draft.recorded_chunks(index))
        entry = draft.entry_at(index)
        self._fill(form_of(entry, FormValues(prefix=str(prefix))))
        self._load(entry_text(entry))
        self._set_error(None)

    @property
    def values(self) -> FormValues:
        """What the switch and the fields show now."""
        message, code, prefix, ready = (self.query_one(f"#{name}", Input).value
                                        for name in FORM_INPUTS)
        return FormValues(self.query_one(KindToggle).kind, message, code, prefix, ready)

    def _fill(self, values: FormValues) -> None:
        """Show ``values`` in the switch and the fields (their change events are echoes)."""
        self._shown = values
        self.query_one(KindToggle).show(values.kind)
        for name, value in zip(FORM_INPUTS, (values.message, values.code, values.prefix,
                                             values.ready), strict=True):
            box = self.query_one(f"#{name}", Input)
            if box.value != value:
                box.value = value
        self.query_one("#oe-prefix-of", Label).update(f"of {len(self._recorded)} recorded chunk(s)")
        self._show_fields(values.kind)

    def _show_fields(self, kind: Kind) -> None:
        for other in KINDS:
            for widget in self.query(f".oe-{other}"):
                widget.display = other == kind

    def _load(self, text: str) -> None:
        self._loaded = text
        area = self.query_one("#oe-json", TextArea)
        if area.text != text:
            area.load_text(text)

    def _set_error(self, error: Error | None) -> None:
        """Show why the entry cannot be served (None: it can); while JSON typed in the box is
        invalid, the switch and the fields wait (a change would replace that text)."""
        self.error = error
        undecided = self.draft is not None and self.index in self.draft.undecided
        status = self.query_one("#oe-json-status", Static)
        status.set_class(error is not None or undecided, "invalid")
        if error is not None:
            status.update(Text("✗ " + error[1]))
        elif undecided:  # valid JSON, but ^s refuses it: the line must not say it is fine
            status.update(Text("✗ never finished: pick throw or hang, or end its chunks with a "
                               "finish"))  # one line at 80 columns
        else:
            status.update(Text("✓ valid entry", style="green"))
        locked = error is not None and error[0] == "json"
        for widget in self.query(".oe-throw, .oe-hang, KindToggle"):
            widget.disabled = locked

    def _take(self, text: str, source: str) -> None:
        """Serve the entry ``text`` says (from the form or typed in the box), or show why not."""
        draft = self.draft
        assert draft is not None
        said: str | None = None
        if not text.strip() and draft.entry_at(self.index) is None:
            self._set_error(None)
        else:
            try:
                entry = parse_entry_text(text, "entry JSON")
                edits.serve_entry(draft, self.index, entry)
            except EntryTextError as exc:
                self._set_error((source, edits.form_problem(exc) if source == "form"
                                 else first_problem(exc)))
            except SidecarError as exc:
                self._set_error((source, first_problem(exc)))
            else:
                if source == "json":
                    self._fill(form_of(entry, self.values))
                self._set_error(None)
                said = edits.describe_entry(draft, self.index)
        self.post_message(self.Changed(said))

    def on_kind_toggle_changed(self, event: KindToggle.Changed) -> None:
        event.stop()
        self._form_changed()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id in FORM_INPUTS:
            event.stop()
            self._form_changed()

    def _form_changed(self) -> None:
        """The user changed the switch or a field: the entry JSON and the draft follow."""
        values = self.values
        if self.draft is None or values == self._shown or (
                self.error is not None and self.error[0] == "json"):
            return
        document = edits.form_document(values, self._shown, self.draft.entry_at(self.index),
                                       self._recorded)
        self._shown = values
        if isinstance(document, str):
            self._set_error(("form", document))
            self.post_message(self.Changed(None))
            return
        text = json.dumps(document, indent=2, ensure_ascii=False)
        self._load(text)
        self._take(text, "form")

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        event.stop()
        text = event.text_area.text
        if self.draft is None or text == self._loaded:
            return
        self._loaded = None
        self._take(text, "json")
