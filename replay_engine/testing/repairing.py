"""``--dsh-replay-record=from_divergence``: a test's replay that records from where its agent
left the recording.

The run is served from the recording while each session's requests follow it; from a
session's first diverged call on, its calls go upstream through the recorder (and calls past
the recording, as ``new_episodes``). When the test passed and every upstream call succeeded,
the cut-and-continued scenario is validated and installed beside numbered backups; otherwise
the scenario is untouched and the attempt is kept (``recording._settle`` judges both).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .recording import NewEpisodes

if TYPE_CHECKING:
    from ..record import Scrubber
    from ..record.episodes import EpisodeRecorder
    from ..record.repair import RepairRecording
    from ..scenario.loading import Scenario
    from ..server import ReplayServer
    from .servers import ServerPool


class FromDivergence(NewEpisodes):
    """One test's run, recorded from each session's divergence."""

    def _begin(self, server: ReplayServer, loaded: Scenario, upstream: str,
               scrub: Scrubber | None) -> RepairRecording:
        from ..record.repair import RepairRecording

        repair = RepairRecording(self.attempt, self.scenario, loaded, upstream, scrub=scrub)
        server.set_overflow(self.run, repair.answer, repair.dialects)
        server.engine.set_go_live(self.run, repair.go_live)
        return repair

    def _end(self, server: ReplayServer) -> None:
        super()._end(server)
        server.engine.set_go_live(self.run, None)

    def _what(self, shown: Callable[[Path], str]) -> str:
        return f"the recording from the divergence of {shown(self.scenario)}"

    def _apply(self, pool: ServerPool, shown: Callable[[Path], str],
               recorder: EpisodeRecorder) -> list[str]:
        from ..record.repair import RepairRecorder, install_repair

        assert isinstance(recorder, RepairRecorder)
        backups = install_repair(recorder, self.scenario, self.attempt)
        pool.changed(self.scenario)
        cuts = recorder.described_cuts()
        return [f"dsh-replay: recorded {len(recorder.reports)} call(s) of "
                f"{shown(self.scenario)} from the divergence ({cuts or 'past the end'}); the "
                f"previous files are kept as {', '.join(b.name for b in backups)}",
                *(f"dsh-replay: warning: {w}" for w in recorder.warnings)]
