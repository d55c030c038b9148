"""Going live from a call (``dsh-replay-tui DIR --upstream URL``): the scenario is served as
usual; a chosen call (``L``) or, with ``--from-divergence``, each session's first diverged
call goes to the upstream with the rest of its session, recorded beside the scenario and
shown in Live as each call ends, the header saying ``● LIVE FROM #N → upstream``. ``V`` stops
and opens the review (old and new calls side by side), which ends in keep (the safe install)
or discard.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import App

from replay_engine import (
    DEFAULT_RUN,
    CallReport,
    RepairSession,
    ReplayError,
    ReplayServer,
    Scenario,
    diff_scenarios,
    shown_url,
)
from replay_engine import events as ev

from .headless.state import AppOptions
from .record_mode import report_text, session_label
from .screens.review import ReviewScreen

if TYPE_CHECKING:
    from replay_engine import ReplayEngine

    from .screens.main import MainScreen
    from .widgets.scripts_view import ScriptsView

Log = Callable[[str | Text], None]


class LiveFrom:
    """The live-from recording of one debugger: armed cuts, the repair, and its end."""

    def __init__(self, options: AppOptions, log: Log, changed: Callable[[], None]) -> None:
        assert options.upstream is not None
        self.options = options
        self.upstream = options.upstream
        self.shown_upstream = shown_url(options.upstream)
        """The upstream as the screens show it (no credentials)."""
        self.auto = options.from_divergence
        self.log = log
        self.changed = changed
        self.armed: set[tuple[int, int]] = set()
        """(script, call) the user chose to go live from."""
        self.went: list[tuple[int, int]] = []
        """(script, call) where sessions went live, in order."""
        self.reports: dict[str, list[CallReport]] = {}
        self.repair: RepairSession | None = None
        self._server: ReplayServer | None = None
        self._closed = False

    # -- the header's RecordingStatus ------------------------------------------------------

    @property
    def active(self) -> bool:
        """True once a session went live, until the review ends it."""
        return self.repair is not None and bool(self.went)

    def counts(self) -> list[tuple[str, int]]:
        """Calls recorded upstream per session."""
        return [(label, len(reports)) for label, reports in self.reports.items()]

    @property
    def title(self) -> str | None:
        """``● LIVE FROM #N → upstream`` (N the last call that went live)."""
        if not self.went:
            return None
        script, call = self.went[-1]
        of = "" if script == 0 else f" of script {script}"
        return f"● LIVE FROM #{call}{of} → {self.shown_upstream}"

    # -- running ---------------------------------------------------------------------------

    def start(self, server: ReplayServer, scenario: Scenario) -> None:
        """Attach a fresh repair to the default run of ``server`` (serving ``scenario``)."""
        self.repair = RepairSession(self.options.scenario, scenario, self.upstream,
                                    on_divergence=self.auto)
        self._closed = False
        self.repair.recorder.listeners.append(self._recorded)
        self.repair.attach(server, DEFAULT_RUN)
        server.engine.set_go_live(DEFAULT_RUN, self._go_live)
        self._server = server
        how = "at each session's first divergence" if self.auto else "from the call you pick (L)"
        self.log(Text(f"live from: calls go to {self.shown_upstream} {how}", style="bold"))

    def _go_live(self, script: int, call: int, found: Any) -> bool:
        if not ((self.auto and found is not None) or (script, call) in self.armed):
            return False
        self.went.append((script, call))
        self.log(Text(f"● LIVE FROM #{call} of script {script} → {self.shown_upstream}"
                      + (f": {found.describe()}" if found is not None else ""), style="bold red"))
        self.changed()
        return True

    def _recorded(self, report: CallReport) -> None:
        self.reports.setdefault(session_label(report), []).append(report)
        line = report_text(report)
        self.log(Text.assemble(("● live ", "bold red"), line[len("● rec "):]))
        self.changed()

    def arm(self, script: int, call: int) -> None:
        """Go live from call ``call`` of script ``script`` when the agent asks for it."""
        self.armed.add((script, call))

    async def finish(self) -> tuple[Scenario, Scenario, list[str]] | None:
        """Stop going live: (old scenario, new scenario, problems) to review, or None when
        nothing went upstream (the attempt is dropped). ReplayError: the result does not load."""
        repair, server = self.repair, self._server
        if repair is None:
            return None
        if not self._closed:
            self._closed = True
            if server is not None:
                repair.detach(server, DEFAULT_RUN)
            await repair.close()
        if not repair.recorded:
            repair.discard()
            self._reset()
            return None
        return repair.scenario, repair.preview(), repair.problems()

    def unreviewed_note(self) -> str | None:
        """What quitting before the review leaves behind and where (None: nothing went live)."""
        repair = self.repair
        if repair is None or not repair.recorded:
            return None
        return (f"went live: {len(repair.recorder.reports)} call(s) from {self.shown_upstream} "
                f"kept in {repair.attempt}, not reviewed and not installed (the scenario is "
                "unchanged)")

    def keep(self) -> list[str]:
        """Install the repair; the lines say what happened (ReplayError: nothing installed)."""
        assert self.repair is not None
        repair = self.repair
        backups = repair.install()
        self._reset()
        return [f"kept: {len(repair.recorder.reports)} new call(s) installed into "
                f"{repair.root}; the old files are kept as "
                + (", ".join(b.name for b in backups) or "(none)"),
                *(f"warning: {w}" for w in repair.recorder.warnings)]

    def discard(self) -> None:
        """Drop the repair: the scenario is left as it was."""
        if self.repair is not None:
            self.repair.discard()
        self._reset()

    def _reset(self) -> None:
        self.repair = None
        self.went.clear()
        self.armed.clear()
        self.reports.clear()
        self.changed()


def live_target(app: LiveFromKeys) -> tuple[int, int] | None:
    """The call ``L`` acts on: the selected one, else the followed run's first divergence."""
    selected = app.scripts_view.selected()
    if selected is not None and selected[1] is not None:
        return selected[0], selected[1]
    return app.engine.state(app.run_name).first_divergence


class LiveFromKeys:
    """The app's keys for going live (mixed into the App, which sets what is declared here)."""

    live_from: LiveFrom | None
    server: ReplayServer | None
    main: MainScreen

    if TYPE_CHECKING:  # the App's own properties and action
        @property
        def scenario(self) -> Scenario | None: ...
        @property
        def engine(self) -> ReplayEngine: ...
        @property
        def run_name(self) -> str: ...
        @property
        def scripts_view(self) -> ScriptsView: ...
        def action_reload(self) -> None: ...

    def _live_ready(self) -> LiveFrom | None:
        assert isinstance(self, App)
        live = self.live_from
        if live is None:
            self.notify("Going live needs --upstream URL (without --record).", severity="warning")
            return None
        if self.server is None or self.scenario is None:
            self.notify("Nothing is served yet.", severity="warning")
            return None
        if live.repair is None:
            live.start(self.server, self.scenario)
        return live

    def watch_divergence(self) -> None:
        """Preselect the first call of the followed run that leaves the recording, so ``L``
        goes live from it (the selection stays the user's once they picked a call)."""
        assert isinstance(self, App)
        def seen(event: ev.EngineEvent) -> None:
            if not isinstance(event, ev.CallStarted) or event.run != self.run_name:
                return
            state = self.engine.state(event.run)
            if any(b.script_index == event.script_index and event.call_index in b.diverged
                   for b in state.bindings):
                self.call_later(self._preselect, event.script_index, event.call_index)

        self.engine.subscribe(seen, chunks=False)

    def _preselect(self, script: int, call: int) -> None:
        selected = self.scripts_view.selected()
        if selected is None or selected[1] is None:
            self.scripts_view.select(script, call)

    def action_go_live(self) -> None:
        """Go live from the selected call (the first diverged one when none is selected)."""
        assert isinstance(self, App)
        live = self._live_ready()
        if live is None:
            return
        target = live_target(self)
        if target is None:
            self.notify("Select a call to go live from.", severity="warning")
            return
        script, call = target
        self.scripts_view.select(script, call)
        live.arm(script, call)
        run = self.engine.state(self.run_name)
        served = any(b.script_index == script and b.cursor > call for b in run.bindings)
        if served:
            self.engine.reset(self.run_name)
        self.main.log_in_order(Text(
            f"live from #{call} of script {script} armed: "
            + ("the run was reset; run the agent again (calls before it replay)" if served
               else "it goes to the upstream when the agent asks for it"), style="bold"))
        self.main.request_flush()

    async def action_review_live(self) -> None:
        """Stop going live and review the new calls before keeping or discarding them."""
        assert isinstance(self, App)
        live = self.live_from
        if live is None or not live.active:
            self.notify("Nothing went live yet (L on a call, or --from-divergence).",
                        severity="warning")
            return
        try:
            found = await live.finish()
        except ReplayError as exc:
            self.main.log_in_order(Text(f"the new calls would not load: [{exc.code}] "
                                        f"{exc.message}; the attempt is kept", style="bold red"))
            return
        if found is None:
            self.main.log_in_order("nothing went upstream: the scenario is unchanged")
            return
        old, new, problems = found

        def ended(keep: bool | None) -> None:
            self._review_ended(bool(keep))

        self.push_screen(ReviewScreen(diff_scenarios(old, new), problems), ended)

    def _review_ended(self, keep: bool) -> None:
        live = self.live_from
        assert live is not None
        if not keep:
            live.discard()
            self.main.log_in_order("discarded: the scenario is unchanged")
            return
        try:
            lines = live.keep()
        except ReplayError as exc:
            self.main.log_in_order(Text(f"not kept: [{exc.code}] {exc.message}",
                                        style="bold red"))
            return
        for line in lines:
            self.main.log_in_order(line)
        self.action_reload()
