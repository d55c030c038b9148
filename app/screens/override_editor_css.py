"""The override editor's layout: a form beside the preview on wide terminals; on narrow ones
(under 140 columns) the form above the preview, without frames, sized so that 80x24 shows a
five-row entry JSON and three rows of each preview."""

EDITOR_CSS = """
OverrideEditorScreen { align: center middle; }
#oe-root { width: 100%; height: 1fr; border: thick $primary; background: $surface; }
#oe-title { height: auto; max-height: 3; padding: 0 1; background: $panel; }
#oe-body { height: 1fr; }
#oe-form { width: 1fr; min-width: 40; height: 1fr; padding: 0 1; }
#oe-preview { width: 1fr; }
.oe-row { height: 1; margin-top: 1; }
.oe-row Input { width: 1fr; background: $boost; }
.oe-row Label { width: auto; margin-right: 1; }
.oe-row .oe-after { margin: 0 1; }
.oe-row Button { margin-left: 1; min-width: 0; width: auto; padding: 0 1; }
.oe-hint { height: auto; margin-top: 1; color: $text-muted; }
#oe-index, #oe-prefix { width: 6; }
#oe-code { width: 20; }
#oe-json {
    height: 1fr; min-height: 7; margin-top: 1; border: round $primary; overflow-x: scroll;
}
#oe-json:focus { border: round $accent; }
#oe-json-status { height: auto; max-height: 3; }
#oe-json-status.invalid { color: $error; }
#oe-status { height: auto; max-height: 5; padding: 0 1; }
#oe-status.error { color: $error; text-style: bold; }
#oe-actions { height: auto; padding: 0 1; }
#oe-actions Button { margin-right: 2; }
/* Narrow terminals: no frames, the form above the preview, Save and Close in the footer. */
OverrideEditorScreen.-narrow #oe-root { border: none; }
OverrideEditorScreen.-narrow #oe-title { max-height: 2; }
OverrideEditorScreen.-narrow #oe-body { layout: vertical; }
OverrideEditorScreen.-narrow #oe-form { width: 100%; min-width: 0; height: auto; }
OverrideEditorScreen.-narrow .oe-row { margin-top: 0; }
OverrideEditorScreen.-narrow .oe-hint { margin-top: 0; }
OverrideEditorScreen.-narrow #oe-json {
    height: 7; min-height: 7; margin-top: 0; border: none; border-top: round $primary;
}
OverrideEditorScreen.-narrow #oe-json:focus { border: none; border-top: round $accent; }
OverrideEditorScreen.-narrow #oe-json-status { max-height: 1; }
OverrideEditorScreen.-narrow #oe-preview { width: 100%; height: 1fr; }
OverrideEditorScreen.-narrow .oe-side { border: none; border-top: round $primary; padding-right: 1; }
OverrideEditorScreen.-narrow #oe-diff-box { border: none; border-top: round $secondary; }
OverrideEditorScreen.-narrow #oe-sides { min-height: 4; }
OverrideEditorScreen.-narrow #oe-diff-box { min-height: 3; }
OverrideEditorScreen.-narrow #oe-status { max-height: 4; }
OverrideEditorScreen.-narrow #oe-actions { display: none; }
OverrideEditorScreen.-narrow #oe-raw #rs-body { layout: vertical; }
OverrideEditorScreen.-narrow #oe-raw #rs-text { width: 100%; height: 1fr; }
OverrideEditorScreen.-narrow #oe-raw #rs-side { width: 100%; min-width: 0; height: 40%; min-height: 7; }
"""
