"""Screens of the debugger."""
