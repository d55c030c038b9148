"""Options of the serving commands that cannot be used (``--url-file``, ``--ready-dir``, a
repair-only flag on a plain record) are one clear line before anything listens: a usage error
(exit 2) naming the value and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay_engine.cli.dispatch import main
from replay_engine.cli.listening import announce
from replay_engine.errors import InputError
from tests.conftest import SAMPLES


def _usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as caught:
        main(list(argv))
    assert caught.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    return err.splitlines()[-1]


@pytest.mark.parametrize("command", ["serve", "record"])
def test_url_file_in_a_missing_directory(tmp_path: Path, command: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "missing" / "url"
    extra = ["--upstream", "http://127.0.0.1:1"] if command == "record" else []
    scenario = str(SAMPLES / "basic-chat") if command == "serve" else str(tmp_path / "new")
    line = _usage_error(capsys, command, scenario, *extra, "--url-file", str(target))
    assert line == (f"dsh-replay {command}: error: argument --url-file: {target}: the directory "
                    f"{tmp_path / 'missing'} does not exist; create it first or name a file in "
                    "an existing directory")
    assert not (tmp_path / "new").exists()


def test_url_file_naming_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = _usage_error(capsys, "serve", str(SAMPLES / "basic-chat"), "--url-file", str(tmp_path))
    assert line == (f"dsh-replay serve: error: argument --url-file: {tmp_path}: is a directory; "
                    f"name a file in it, e.g. {tmp_path / 'url.txt'}")


def test_ready_dir_naming_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    afile = tmp_path / "notes.txt"
    afile.write_text("x")
    line = _usage_error(capsys, "serve", str(SAMPLES / "hang-ready-file"), "--ready-dir", str(afile))
    assert line == (f"dsh-replay serve: error: argument --ready-dir: {afile}: not a directory; "
                    "give the directory hang readyFiles are made in (it is created when missing)")


def test_a_url_file_that_cannot_be_written_is_an_input_error(tmp_path: Path) -> None:
    # What the start-up check cannot see (the directory went away, no permission) is still one
    # typed error naming the option's path, not the temporary file's.
    blocker = tmp_path / "was-a-dir"
    blocker.write_text("")
    with pytest.raises(InputError) as caught:
        announce("http://127.0.0.1:1", blocker / "url")
    assert caught.value.message.startswith(f"--url-file {blocker / 'url'}: cannot write the URL (")
    assert caught.value.message.endswith("); give a file in a writable directory.")


def test_keep_failures_without_a_repair_is_refused(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # A plain record has nothing to keep or discard: the flag would be silently ignored.
    target = tmp_path / "new"
    assert main(["record", str(target), "--upstream", "http://127.0.0.1:1",
                 "--keep-failures"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("dsh-replay: error: --keep-failures goes with "
                                        "--from-divergence")
    assert err.count("\n") == 1 and not target.exists()


@pytest.mark.parametrize("name", ["", "  ", "a b", "http://x", "user@host"])
def test_allow_host_that_names_no_host(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    line = _usage_error(capsys, "serve", str(SAMPLES / "basic-chat"), "--allow-host", name)
    assert line.startswith(f"dsh-replay serve: error: argument --allow-host: {name!r} is not a "
                           "host name;")
