"""Widgets of the main screen and the override editor, one per module; each shows what it is given."""
