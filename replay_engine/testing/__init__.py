"""Tools for testing agents against a replay: the bundled demo agent (``demo_agent``), which
drives every recorded call of a running server through the official openai SDK, and the pytest
plugin (``pytest_plugin``, registered through the ``pytest11`` entry point).
"""
