"""Scenario files: reading session logs, deriving scripts, sidecars, loading.

``layout`` names a scenario directory's files; ``logs`` parses log lines and headers;
``callkeys`` holds call keys and the derivation errors; ``logscan`` the line Structs and slow
path the readers share; ``derive`` the reference derivation and ``derive_fast`` the streaming
loader; ``logcheck`` the check-only reader behind ``validate`` and ``check`` the whole-scenario
check; ``sidecar`` the override file; ``loading`` the ``Scenario``; ``config`` the serve config.
The JSON number rules (``jsonnumbers``) and chunk shapes (``chunkshape``) live one layer down.
"""
