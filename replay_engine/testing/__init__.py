"""Testing helpers for code that talks to a replayed scenario (the pytest plugin lives in
``replay_engine.testing.pytest_plugin``, registered through the ``pytest11`` entry point)."""
