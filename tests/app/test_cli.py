"""``dsh-replay-tui`` arguments: bad ones exit 2 with one clear line; good ones become options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dsh_replay_tui.__main__ import build_parser, main, options_from_args

from tests.conftest import SAMPLES

BASIC = str(SAMPLES / "basic-chat")


@pytest.mark.parametrize(("argv", "needle"), [
    ([BASIC, "--port", "abc"], "argument --port: 'abc' is not a port number (0..65535)"),
    ([BASIC, "--port", "70000"], "argument --port: 70000 is outside 0..65535"),
    ([BASIC, "--pace", "fast"], "--pace 'fast': expected recorded or recorded:SPEED"),
    ([BASIC, "--pace", "recorded:0"], "SPEED must be a positive number"),
    ([BASIC, "--pace-ms", "-5"], "--pace-ms -5: must be a non-negative integer"),
    ([], "the following arguments are required: scenario"),
])
def test_bad_arguments_exit_2_with_a_clear_message(argv: list[str], needle: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    assert code == 2
    err = capsys.readouterr().err
    assert needle in err
    assert "Traceback" not in err


def test_a_bad_config_file_names_the_file_and_field(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "replay.json"
    config.write_text(json.dumps({"paceMs": -1}), encoding="utf-8")
    assert main([BASIC, "--config", str(config)]) == 1  # as serve: a file that does not load
    err = capsys.readouterr().err
    assert str(config) in err and "paceMs" in err
    config.write_text("{", encoding="utf-8")
    assert main([BASIC, "--config", str(config)]) == 1
    assert "not valid JSON" in capsys.readouterr().err
    assert main([BASIC, "--config", str(tmp_path / "missing.toml")]) == 1
    assert "cannot read the config file" in capsys.readouterr().err


def test_good_arguments_become_app_options(tmp_path: Path) -> None:
    config = tmp_path / "replay.json"
    config.write_text(json.dumps({"paceMs": 7, "providers": [{"id": "p", "models": [{"id": "m"}]}]}),
                      encoding="utf-8")
    args = build_parser().parse_args([BASIC, "--port", "0", "--host", "127.0.0.2", "--config",
                                      str(config), "--ready-dir", str(tmp_path)])
    args.scenario_path = Path(args.scenario)
    options = options_from_args(args)
    assert (options.port, options.host, options.pace.ms, options.ready_dir) == (0, "127.0.0.2", 7, tmp_path)
    assert options.providers is not None and options.providers[0].id == "p"
    args = build_parser().parse_args([BASIC, "--pace", "recorded:2", "--pace-ms", "3"])
    args.scenario_path = Path(args.scenario)
    pace = options_from_args(args).pace
    assert (pace.mode, pace.speed, pace.ms) == ("recorded", 2.0, 3)


def test_url_file_becomes_an_option(tmp_path: Path) -> None:
    args = build_parser().parse_args([BASIC, "--url-file", str(tmp_path / "url.txt")])
    args.scenario_path = Path(args.scenario)
    assert options_from_args(args).url_file == tmp_path / "url.txt"
    args = build_parser().parse_args([BASIC])
    args.scenario_path = Path(args.scenario)
    assert options_from_args(args).url_file is None


@pytest.mark.parametrize("where", ["directory", "missing-parent"])
def test_a_verdict_file_that_cannot_be_written_is_refused_at_start(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str) -> None:
    flag = "--verdict-file"
    path = tmp_path if where == "directory" else tmp_path / "nowhere" / "verdict.json"
    assert main([BASIC, flag, str(path)]) == 2  # before the debugger starts: no terminal needed
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"dsh-replay-tui: error: {flag} {path}: ")
    assert ("is a directory" if where == "directory" else "does not exist") in err


@pytest.mark.parametrize("where", ["options_from_args", "run"])
def test_ctrl_c_while_starting_is_one_line_not_a_traceback(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], where: str) -> None:
    import dsh_replay_tui.__main__ as entry
    from dsh_replay_tui.app import ReplayApp

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    if where == "run":  # before the screen takes the terminal, Ctrl+C is SIGINT
        monkeypatch.setattr(ReplayApp, "run", interrupted)
    else:
        monkeypatch.setattr(entry, "options_from_args", interrupted)
    assert main([BASIC, "--port", "0"]) == 130
    err = capsys.readouterr().err
    assert err == "dsh-replay-tui: interrupted while starting; nothing was served\n"
