"""Textual-free parts of the debugger: its state, scenario loading and watching, and what its
panes show (event-log lines, call views), each usable and testable without a terminal."""
