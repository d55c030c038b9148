"""``--dsh-replay-record=from_divergence``: a test's replay that records from where its agent
left the recording.

The run is served from the recording while each session's requests follow it; from a
session's first diverged call on, its calls go upstream through the recorder (and calls past
the recording, as ``new_episodes``). When the test passed and every upstream call succeeded,
the cut-and-continued scenario is validated and installed beside numbered backups; otherwise
the scenario is untouched and the attempt is kept (``recording._settle`` judges both).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .recording import Outcome, _settle

if TYPE_CHECKING:
    from ..record import Scrubber
    from ..record.repair import RepairRecording
    from ..server import ReplayServer
    from .servers import ServerPool


class FromDivergence:
    """One test's run, recorded from each session's divergence."""

    def __init__(self, pool: ServerPool, server: ReplayServer, scenario: Path, run: str,
                 upstream: str, scrub: Scrubber | None) -> None:
        from ..record.directory import ensure_not_recording
        from ..record.repair import RepairRecording
        from ..record.staging import attempt_directory

        loaded = server.scenario
        assert loaded is not None
        ensure_not_recording(scenario)
        self.scenario = scenario
        self.run = run
        self.attempt = attempt_directory(scenario)

        def begin() -> RepairRecording:
            repair = RepairRecording(self.attempt, scenario, loaded, upstream, scrub=scrub)
            server.set_overflow(run, repair.answer, repair.dialects)
            server.engine.set_go_live(run, repair.go_live)
            return repair

        try:
            self.repair: RepairRecording | None = pool.loop.call(begin)
        except BaseException:
            shutil.rmtree(self.attempt, ignore_errors=True)
            raise
        self._server = server

    def conclude(self, pool: ServerPool, shown: Callable[[Path], str], *, test_failed: bool,
                 keep_failures: bool) -> Outcome:
        """Stop forwarding; install the repaired scenario, or keep the attempt."""
        from ..record.repair import install_repair

        repair, self.repair = self.repair, None
        if repair is None:
            return Outcome()
        server, run = self._server, self.run

        async def stop() -> None:
            server.set_overflow(run, None)
            server.engine.set_go_live(run, None)
            await repair.close()

        pool.loop.run(stop())
        recorder = repair.recorder
        if not recorder.reports and not recorder.dropped and recorder.failure is None:
            shutil.rmtree(self.attempt, ignore_errors=True)  # the agent followed the recording
            return Outcome()

        def apply() -> list[str]:
            backups = install_repair(recorder, self.scenario, self.attempt)
            pool.changed(self.scenario)
            cuts = ", ".join(f"script {s} from call #{c}" for s, c in sorted(recorder.cuts.items()))
            return [f"dsh-replay: recorded {len(recorder.reports)} call(s) of "
                    f"{shown(self.scenario)} from the divergence ({cuts or 'past the end'}); the "
                    f"previous files are kept as {', '.join(b.name for b in backups)}",
                    *(f"dsh-replay: warning: {w}" for w in recorder.warnings)]

        return _settle(recorder, self.attempt, f"the recording from the divergence of "
                       f"{shown(self.scenario)}", shown, test_failed=test_failed,
                       keep_failures=keep_failures, stopped=None, apply=apply)
