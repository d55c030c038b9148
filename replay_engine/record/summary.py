"""What a recording tells its user: one line per recorded call (``dsh-replay record``'s stderr)
and the summary at its end (also the debugger's record mode's)."""

from __future__ import annotations

from . import Recording
from .calls import CallReport


def report_line(report: CallReport) -> str:
    """The stderr line of one recorded call."""
    who = "anonymous session" if report.session is None else f"session {report.session}"
    head = f"{report.file} call #{report.index} ({report.key}, {who}): {report.chunks} chunks"
    if report.failed:
        return f"{head}, failed upstream {report.code}: {report.message}"
    return f"{head}, finish {report.finish}"


def report_warnings(report: CallReport) -> list[str]:
    """The warnings of one recorded call, each naming it (file, call number and key)."""
    return [f"{report.file} call #{report.index} (model call {report.key}): {note}"
            for note in report.notes]


def recording_summary(recording: Recording) -> list[str]:
    """What a finished recording wrote, and what keeps it from loading."""
    recorder = recording.recorder
    logs = ", ".join(log.path.name for log in recorder.sessions.values()) or "no logs"
    lines = [f"recorded {len(recording.reports)} call(s) of {len(recorder.sessions)} session(s) "
             f"into {recording.directory} ({logs})"]
    unreached = sum(1 for report in recording.reports if not report.reached)
    if unreached:
        lines.append(f"{unreached} of them never reached the upstream: it did not answer "
                     "(check the --upstream URL and that it is up); each is recorded as the "
                     "502 the agent got, not as anything the provider said")
    if recorder.dropped:
        lines.append(f"{len(recorder.dropped)} call(s) still streaming at stop were not recorded")
    if recorder.primary_failed:
        lines.append("replay.override.json decides the primary's failed call(s) as throws")
    if recorder.failure is not None:
        lines.append(f"the recording stopped early: [{recorder.failure.code}] "
                     f"{recorder.failure.message}")
    if recorder.backups:
        lines.append("the previous scenario is kept as " +
                     ", ".join(p.name for p in recorder.backups))
    lines += [f"problem: {problem}" for problem in recording.problems]
    return lines
