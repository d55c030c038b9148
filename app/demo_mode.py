"""The bundled demo agent, run from the debugger (``d``): it replays the served scenario through
one dialect's client (the openai SDK, or httpx for Messages and Gemini), or, while recording,
says a fixed short conversation through the recorder so a newcomer without an agent can
record and then replay."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text

from replay_engine import ReplayError

from .screens.dialect_choice import DemoDialect

Log = Callable[[str | Text], None]


class DemoRunner:
    """One demo agent at a time; remembers the dialect last chosen (the chooser starts there)."""

    def __init__(self, log: Log) -> None:
        self.log = log
        self.running = False
        self.dialect: DemoDialect = "openai"

    async def run(self, url: str, label: str, dialect: DemoDialect, *, ready_dir: str,
                  recording: bool) -> None:
        """Drive the server at ``url`` (shown as ``label``) and log each call as it ends."""
        self.dialect = dialect
        self.running = True
        what = "demo conversation" if recording else "demo agent"
        self.log(f"{what} ({dialect}) started against {label}")
        try:
            if recording:
                from replay_engine import run_demo_conversation  # loaded on first use, as below

                result = await run_demo_conversation(url, dialect=dialect,
                                                     out=lambda line: self.log("demo: " + line))
            else:
                from replay_engine import run_demo_agent  # loaded on first use: it imports openai

                result = await run_demo_agent(url, ready_dir=ready_dir, dialect=dialect,
                                              out=lambda line: self.log("demo: " + line))
        except ReplayError as exc:
            self.log(f"{what} failed [{exc.code}]: {exc.message}")
        else:
            done = "recorded" if recording else "consumed"
            self.log(f"{what} ({dialect}) done ({done}: {result.consumed})"
                     + ("; press s to stop recording and replay it" if recording else ""))
        finally:
            self.running = False
