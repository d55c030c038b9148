"""dsh-replay-tui: the interactive scenario debugger (Textual)."""
