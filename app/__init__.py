"""dsh-replay-tui: the interactive scenario debugger (Textual). ``app.py`` holds the App (engine,
server, loading, global keys); ``screens/``, ``widgets/`` and the Textual-free ``headless/`` the rest."""
