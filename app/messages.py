"""Messages the debugger's widgets and workers post (past tense: what happened)."""

from __future__ import annotations

from typing import Any

from textual.message import Message

from replay_engine.errors import ReplayError
from replay_engine.scenario import Scenario


class CallSelected(Message):
    """The user moved to a call (``call_index`` None: a script header row)."""

    def __init__(self, script_index: int, call_index: int | None) -> None:
        super().__init__()
        self.script_index = script_index
        self.call_index = call_index


class ScenarioLoaded(Message):
    """A (re)load of the scenario produced new scripts."""

    def __init__(self, scenario: Scenario, *, initial: bool) -> None:
        super().__init__()
        self.scenario = scenario
        self.initial = initial


class ScenarioLoadFailed(Message):
    """A (re)load failed; the last good scripts keep being served."""

    def __init__(self, error: ReplayError, *, initial: bool) -> None:
        super().__init__()
        self.error = error
        self.initial = initial


class DemoAgentFinished(Message):
    """The bundled demo agent returned (``error`` set when it failed)."""

    def __init__(self, result: Any = None, error: str | None = None) -> None:
        super().__init__()
        self.result = result
        self.error = error
