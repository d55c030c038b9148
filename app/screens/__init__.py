"""Screens of the debugger: the main screen with its stepping keys, the override editor and the
modals over them (verdict, discard question)."""
