"""Widgets of the debugger, one per module."""
