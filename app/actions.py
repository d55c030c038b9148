"""The debugger's key actions: step gate, breakpoints, cancel, pace, reset, verdict, reload and
the demo agent (the override editor is in ``editing``). Each calls public engine methods only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from replay_engine import Pace, ReplayError, verdict_text

from .screens.verdict import VerdictScreen

if TYPE_CHECKING:
    from .app import ReplayApp

PACE_STEPS_MS = (0, 5, 20, 50, 100, 250, 1000)


class DebuggerActions:
    """Mixed into ReplayApp: the ``action_*`` methods its bindings name."""

    def _target(self: ReplayApp, *, want: str | None = None) -> tuple[bool, str | None]:
        """The session a key acts on: the one bound to the selected script, else the first
        whose call is ``want`` (e.g. paused), else the first with a call in flight."""
        bindings = [b for b in self.engine.state(self.run_name).bindings if b.call_index is not None]
        selected = self.scripts_view.selected()
        if selected is not None:
            for b in bindings:
                if b.script_index == selected[0] and (want is None or b.status == want):
                    return True, b.session
        for b in bindings:
            if want is None or b.status == want:
                return True, b.session
        return False, None

    # -- actions ---------------------------------------------------------------------------

    def action_tab(self: ReplayApp, step: int) -> None:
        """Show the next or previous tab of the call pane."""
        self.call_pane.cycle_tab(step)

    def action_mode(self: ReplayApp, mode: str) -> None:
        """Step mode: run, break at every call, break at every chunk."""
        self.engine.set_mode(mode)  # type: ignore[arg-type]

    def action_breakpoint(self: ReplayApp) -> None:
        """Toggle a breakpoint on the selected call."""
        selected = self.scripts_view.selected()
        if selected is None or selected[1] is None:
            self.notify("Select a call to put a breakpoint on.", severity="warning")
            return
        self.engine.toggle_breakpoint(selected[0], selected[1])

    def action_pause(self: ReplayApp) -> None:
        """Hold the selected session's streaming call before its next chunk."""
        found, key = self._target(want="streaming")
        if not found or not self.engine.pause(key, run=self.run_name):
            self.notify("No call is streaming.", severity="warning")

    def action_step(self: ReplayApp, how: str) -> None:
        """Release a paused call by one chunk, or to the end of the call."""
        found, key = self._target(want="paused")
        if not found or not self.engine.step(key, run=self.run_name, how=how):  # type: ignore[arg-type]
            self.notify("No call is paused.", severity="warning")

    def action_resume(self: ReplayApp) -> None:
        """Continue: back to run mode, every paused call released."""
        self.engine.set_mode("run")

    def action_cancel(self: ReplayApp) -> None:
        """Cancel the selected session's in-flight call (a hang or a paused stream)."""
        found, key = self._target()
        if not found or not self.engine.cancel(key, run=self.run_name):
            self.notify("No call in flight to cancel.", severity="warning")

    def action_cancel_hanging(self: ReplayApp) -> None:
        """Cancel every hanging call of the run."""
        count = self.engine.cancel(run=self.run_name, all_hanging=True)
        self.notify(f"Cancelled {count} hanging call(s).")

    def action_pace(self: ReplayApp, direction: int) -> None:
        """Step the fixed pace faster (-1) or slower (+1)."""
        ms = self.engine.pace.ms
        steps = list(PACE_STEPS_MS)
        index = min(range(len(steps)), key=lambda i: abs(steps[i] - ms))
        index = min(max(index + direction, 0), len(steps) - 1)
        self.engine.set_pace(Pace("fixed", steps[index]))

    def action_pace_recorded(self: ReplayApp) -> None:
        """Switch between the recorded gaps and a fixed pace."""
        pace = self.engine.pace
        self.engine.set_pace(Pace("fixed", pace.ms) if pace.mode == "recorded"
                             else Pace("recorded", pace.ms, 1.0))

    def action_reset(self: ReplayApp) -> None:
        """Forget the run's bindings and cursors (the agent is about to start again)."""
        self.engine.reset(self.run_name)

    def action_assert_consumed(self: ReplayApp) -> None:
        """Show the assert-consumed verdict with every problem."""
        problems = self.engine.consumed_problems(self.run_name)
        self.live_pane.log_event(verdict_text(problems, len(self.engine.scripts)).splitlines()[0])
        self.push_screen(VerdictScreen(problems, len(self.engine.scripts)))

    def action_reload(self: ReplayApp) -> None:
        """Reload the scenario from disk now."""
        self.run_worker(self.load(), group="reload", exclusive=True)

    def action_demo(self: ReplayApp) -> None:
        """Run the bundled demo agent against the embedded server."""
        if self.url is None:
            self.notify("The server is not running.", severity="error")
            return
        if self._demo_running:
            self.notify("The demo agent is already running.", severity="warning")
            return
        try:
            from replay_engine import run_demo_agent
        except ImportError:
            self.notify("The demo agent is not available in this installation.", severity="error")
            return
        self._demo_running = True
        self.run_worker(self._demo(run_demo_agent), group="demo")

    async def _demo(self: ReplayApp, run_demo_agent: Any) -> None:
        self.log_in_order(f"demo agent started against {self.url_label}")
        try:
            result = await run_demo_agent(self.url, ready_dir=str(self.engine.ready_dir),
                                          out=lambda line: self.log_in_order("demo: " + line))
        except ReplayError as exc:
            self.log_in_order(f"demo agent failed [{exc.code}]: {exc.message}")
        else:
            consumed = getattr(result, "consumed", None)
            self.log_in_order(f"demo agent done (consumed: {consumed})")
        finally:
            self._demo_running = False
