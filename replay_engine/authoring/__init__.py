"""Authoring ``replay.override.json``: the editable draft with preview and atomic save
(``draft``), its comparisons and save record (``compare``), entry text parsing with exact
locations (``entry_text``), and drafts for logs whose call never finished (``unfinished``).
"""
