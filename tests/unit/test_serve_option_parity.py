"""One option set for everything that serves: ``dsh-replay serve`` and ``dsh-replay-tui`` take
the same serving flags, with the same types and defaults, and exit with the same status for
the same bad value; ``dsh-replay record`` shares the listening flags and ``--url-file``; a
busy port exits 4 with one message from all three."""

from __future__ import annotations

import argparse
import asyncio
import errno
import json
import os
import socket
import sys
from pathlib import Path

import pytest
from dsh_replay_tui.__main__ import build_parser as tui_parser
from dsh_replay_tui.__main__ import main as tui_main
from dsh_replay_tui.app import ReplayApp
from dsh_replay_tui.headless.state import AppOptions

from replay_engine.cli.dispatch import build_parser as cli_parser
from replay_engine.cli.dispatch import main as cli_main
from replay_engine.server.listen import cannot_listen
from tests.conftest import SAMPLES

BASIC = str(SAMPLES / "basic-chat")


def _actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {a.dest: a for a in parser._actions if a.option_strings and a.dest != "help"}


def _subparser(name: str) -> argparse.ArgumentParser:
    parser = cli_parser(name)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found: argparse.ArgumentParser = sub.choices[name]
    return found


def _shape(action: argparse.Action) -> tuple[object, ...]:
    return (tuple(action.option_strings), type(action).__name__, action.default, action.type,
            action.nargs, action.metavar, action.help)


def test_every_serve_flag_is_a_debugger_flag_with_the_same_type_default_and_help() -> None:
    serve = _actions(_subparser("serve"))
    tui = _actions(tui_parser())
    assert len(serve) >= 10
    assert {dest: _shape(a) for dest, a in serve.items()} == \
           {dest: _shape(tui[dest]) for dest in serve if dest in tui}
    assert sorted(set(serve) - set(tui)) == []


def test_record_listens_with_the_same_flags() -> None:
    serve = _actions(_subparser("serve"))
    record = _actions(_subparser("record"))
    for dest in ("host", "port", "url_file"):
        assert _shape(record[dest]) == _shape(serve[dest])
    assert "allow_host" not in record  # the recorder answers loopback names only


@pytest.mark.anyio
async def test_a_busy_port_exits_4_with_one_message_from_every_front_end(
        tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        said = cannot_listen("127.0.0.1", port, OSError(errno.EADDRINUSE,
                                                        os.strerror(errno.EADDRINUSE))).message
        commands = {"serve": ["serve", BASIC],
                    "record": ["record", str(tmp_path / "rec"), "--upstream", "http://127.0.0.1:9"]}
        procs = {name: await asyncio.create_subprocess_exec(
            sys.executable, "-m", "replay_engine.cli", *argv, "--port", str(port),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            for name, argv in commands.items()}
        app = ReplayApp(AppOptions(scenario=Path(BASIC), port=port, watch=False))
        async with app.run_test(size=(160, 40)) as pilot:
            await app.ready.wait()
            await pilot.press("q")
        done = {name: (proc, await asyncio.wait_for(proc.communicate(), 60))
                for name, proc in procs.items()}
    assert app.return_code == 4 and app.return_value == f"replay NOT served: {said}"
    for name, (proc, (out, err)) in done.items():
        assert proc.returncode == 4, (name, err)
        assert err.decode().splitlines()[-1] == f"dsh-replay: error [CANNOT_LISTEN]: {said}", name
        assert out == b"", name


def _exit(call: object) -> int:
    try:
        return int(call())  # type: ignore[operator]
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.mark.parametrize(("flags", "status"), [
    (["--port", "70000"], 2),
    (["--port", "x"], 2),
    (["--pace-ms", "-5"], 2),
    (["--pace", "fast"], 2),
    (["--pace", "recorded:0"], 2),
    (["--journal-limit", "0"], 2),
    (["--journal-limit", "many"], 2),
    (["--config", "{missing}"], 1),
    (["--config", "{bad}"], 1),
])
def test_a_bad_value_exits_with_the_same_status_from_both(flags: list[str], status: int,
                                                         tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"paceMs": -1}), encoding="utf-8")
    flags = [f.replace("{missing}", str(tmp_path / "missing.toml")).replace("{bad}", str(bad))
             for f in flags]
    assert _exit(lambda: cli_main(["serve", BASIC, *flags])) == status
    serve_err = capsys.readouterr().err
    assert _exit(lambda: tui_main([BASIC, *flags])) == status
    tui_err = capsys.readouterr().err
    for err in (serve_err, tui_err):
        assert "Traceback" not in err and err.strip()


def test_the_wire_options_resolve_alike_for_both_front_ends() -> None:
    from dsh_replay_tui.__main__ import options_from_args

    from replay_engine import WireOptions, serve_options

    flags = [BASIC, "--chat-error-finish", "reason", "--responses-reasoning", "content"]
    wanted = WireOptions(chat_error_finish="reason", responses_reasoning="content")
    args = _subparser("serve").parse_args(flags)
    assert serve_options(args).wire == wanted
    tui = tui_parser().parse_args(flags)
    tui.scenario_path = Path(BASIC)
    assert options_from_args(tui).wire == wanted
    assert serve_options(_subparser("serve").parse_args([BASIC])).wire == WireOptions()
