"""``dsh-replay record DIR --upstream URL --from-divergence``: repair a scenario in place.

Serves DIR as ``serve`` does (sessions bind the same way) until Ctrl-C / SIGTERM. Each
session is answered from the recording while its requests follow it; from its first diverged
call (or a ``--from SCRIPT:CALL`` cut) on, its calls go to the upstream through the recorder.
On stop the result is validated and installed beside numbered backups, only when every
upstream call succeeded (or ``--keep-failures``). Exit 0: installed, or nothing left the
recording (the scenario byte for byte); 1: not installed (the attempt kept, the failed call
named), or another recorder holds DIR; 2: DIR holds no scenario that loads, or a ``--from``
out of range (nothing written).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from ..errors import ReplayError, ScenarioNotFoundError
from ..record.calls import CallReport
from ..record.directory import existing_scenario_files
from ..record.repair import CallRef, RepairSession, check_call_refs, parse_call_ref
from ..record.summary import report_line
from ..scenario.loading import Scenario, load_scenario
from .listening import announce, stop_on_signals

EXIT_NOT_INSTALLED, EXIT_BAD_SCENARIO = 1, 2


def _say(line: str) -> None:
    print(f"dsh-replay: {line}", file=sys.stderr, flush=True)


def _scenario(args: argparse.Namespace) -> tuple[Scenario, list[CallRef]]:
    """The scenario and the cuts asked for (ReplayError naming what is wrong)."""
    root = Path(args.scenario)
    if not root.is_dir() or not existing_scenario_files(root):
        raise ScenarioNotFoundError(f"{root}: holds no scenario to record from its divergence "
                                    "(no session log, no replay.override.json); record it "
                                    "first: dsh-replay record DIR --upstream URL")
    scenario = load_scenario(root)
    refs = [parse_call_ref(text) for text in args.cuts or ()]
    return scenario, list(check_call_refs(scenario, refs))


async def _run(args: argparse.Namespace) -> int:
    from ..engine import DEFAULT_RUN
    from ..record import load_scrub_file
    from ..record.directory import lock_directory
    from ..record.proxy import check_upstream
    from ..server import ReplayServer
    from ..server.options import ServeOptions

    check_upstream(args.upstream)
    try:
        scenario, cuts = _scenario(args)
    except ReplayError as exc:
        _say(f"error [{exc.code}]: {exc.message}")
        return EXIT_BAD_SCENARIO
    root = Path(args.scenario)
    scrub = load_scrub_file(args.scrub) if args.scrub else None
    lock = lock_directory(root)  # one recorder at a time on DIR (RECORDING_LOCKED)
    try:
        repair = RepairSession(root, scenario, args.upstream, scrub=scrub, cuts=cuts)

        def show(report: CallReport) -> None:
            _say(f"upstream: {report_line(report)}")

        repair.recorder.listeners.append(show)
        # record's listening flags; every other option at serve's default
        options = ServeOptions(host=args.host, port=args.port, url_file=args.url_file)
        engine = options.new_engine(scenario.scripts)
        server = ReplayServer.serving(engine, options, scenario=scenario)
        repair.attach(server, DEFAULT_RUN)
        with stop_on_signals() as stop:
            try:
                announce(await server.start(), options.url_file)  # CannotListenError: exit 4
                await stop.wait()
            finally:
                await server.stop()
                await repair.close()
        return _conclude(repair, keep=args.keep_failures)
    finally:
        lock.release()


def _conclude(repair: RepairSession, *, keep: bool) -> int:
    """Install the attempt when it is right (or kept as asked), else keep it and say why."""
    root, recorder = repair.root, repair.recorder
    if not repair.recorded:
        repair.discard()
        print(f"every request followed the recording: nothing went upstream and {root} is "
              "unchanged", flush=True)
        return 0
    problems = repair.problems()
    cuts = recorder.described_cuts()
    print(f"recorded {len(recorder.reports)} call(s) upstream"
          + (f" ({cuts})" if cuts else ""), flush=True)
    if not problems or keep:
        try:
            backups = repair.install()
        except ReplayError as exc:
            problems.append(f"the result would not load: [{exc.code}] {exc.message}")
        else:
            for warning in recorder.warnings:
                _say(f"warning: {warning}")
            if problems:
                _say("installed as asked (--keep-failures) although: " + "; ".join(problems))
            print(f"installed into {root}; the previous files are kept as "
                  + (", ".join(b.name for b in backups) or "(none)"), flush=True)
            return 0
    _say(f"not installed, so {root} is unchanged:")
    for problem in problems:
        print(f"  {problem}", file=sys.stderr, flush=True)
    print(f"  the attempt is kept in {repair.attempt} (read it, then delete it); run again, or "
          "pass --keep-failures to install a recording like it", file=sys.stderr, flush=True)
    return EXIT_NOT_INSTALLED


def run_repair(args: argparse.Namespace) -> int:
    """Handler of ``dsh-replay record --from-divergence``."""
    return asyncio.run(_run(args))
