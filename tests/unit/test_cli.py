"""The headless ``dsh-replay`` CLI: inspect (human and --json), validate, exit codes, error paragraphs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from replay_engine import load_scenario
from replay_engine.cli.dispatch import main
from tests.conftest import ROOT, SAMPLES, conformance_dir
from tests.unit.logtools import call_events, header, text_chunks, write_scenario

GOOD = sorted(p.name for p in SAMPLES.iterdir() if p.is_dir() and not p.name.startswith("broken-"))
BROKEN = sorted(p.name for p in SAMPLES.iterdir() if p.is_dir() and p.name.startswith("broken-"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_samples_present() -> None:
    assert {"basic-chat", "nested-subagents", "packed-rows", "retry", "compaction", "patch-throw-append",
            "hang-ready-file", "from-request"} <= set(GOOD)
    assert {"broken-unfinished-call", "broken-sidecar", "broken-json-line",
            "broken-packed-row"} <= set(BROKEN)


@pytest.mark.parametrize("name", GOOD)
def test_inspect_json_is_the_conformance_shape(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "inspect", str(SAMPLES / name), "--json")
    assert (code, err) == (0, "")
    doc = json.loads(out)
    assert doc == load_scenario(SAMPLES / name).to_json()
    assert set(doc) == {"ok", "scripts", "headers"} and doc["ok"] is True
    for script in doc["scripts"]:
        assert set(script) == {"recordedId", "createdAt", "entries", "primary"}
        for entry in script["entries"]:
            assert "origin" not in entry
            assert set(entry) <= {"kind", "chunks", "message", "code", "readyFile"}


def test_inspect_json_matches_a_reference_result(capsys: pytest.CaptureFixture[str]) -> None:
    corpus = conformance_dir()
    if corpus is None:
        pytest.skip("conformance corpus absent (plain clone)")
    for expected_file in sorted((corpus / "expected").glob("*.json"))[:5]:
        expected = json.loads(expected_file.read_text(encoding="utf-8"))
        expected.pop("scenario", None)
        code, out, _ = run(capsys, "inspect", str(corpus / "scenarios" / expected_file.stem), "--json")
        assert json.loads(out) == expected if expected["ok"] else json.loads(out)["ok"] is False
        assert code == (0 if expected["ok"] else 1)


def test_inspect_human_view(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "inspect", str(SAMPLES / "nested-subagents"))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith(f"scenario {SAMPLES / 'nested-subagents'}: 3 session script(s)")
    assert lines[1].startswith("[0] primary nest-parent  createdAt 1767312000000  file ")
    assert "seedLength 8" in out and "[2] child nest-child-fork  createdAt 1767312002000" in out
    assert "e+" not in out
    call = next(line for line in lines if "1/3" in line)
    assert call.split()[:6] == ["#2", "1/3", "chunks", "derived", "6", "chunks"]
    assert "finish=stop" in call and "Docs hold guide.md and api.md; there are 42 tests." in call
    assert "tools: task" in out


@pytest.mark.parametrize(
    ("name", "fragments"),
    [
        ("patch-throw-append", ["sidecar (patches)", "throw  patched", "finish=throw RATE_LIMIT",
                                "throws RATE_LIMIT: rate limited, retry later", "chunks appended"]),
        ("hang-ready-file", ["sidecar (list)", "hang   replaced", "finish=hang",
                             "hangs until cancelled (readyFile hang-ready.marker)"]),
        ("retry", ["finish=error (SERVER)", "finish=stop"]),
        ("packed-rows", ["17 chunks", "tools: grep\n"]),
        ("compaction", ["compaction chunks derived", "Summary: the user asked"]),
    ],
)
def test_inspect_human_details(name: str, fragments: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "inspect", str(SAMPLES / name))
    assert code == 0
    for fragment in fragments:
        assert fragment in out + "\n"


def test_inspect_fractional_created_at(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_scenario(tmp_path, (header("f", created=12.5), call_events(1, 1, text_chunks("x"))))
    _, out, _ = run(capsys, "inspect", str(tmp_path))
    assert "createdAt 12.5 " in out


@pytest.mark.parametrize("name", BROKEN)
def test_inspect_broken_json(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "inspect", str(SAMPLES / name), "--json")
    assert code == 1
    doc = json.loads(out)
    assert set(doc) == {"ok", "error", "code"} and doc["ok"] is False and doc["code"]
    assert str(SAMPLES / name) in doc["error"]
    assert err == ""


@pytest.mark.parametrize("name", BROKEN)
def test_inspect_broken_human_is_one_paragraph(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "inspect", str(SAMPLES / name))
    assert (code, out) == (1, "")
    assert err.startswith("dsh-replay: error [")
    assert "Traceback" not in err
    assert "\n\n" not in err.strip()
    assert str(SAMPLES / name) in err


BROKEN_EXPECT = {
    "broken-unfinished-call": ["session.jsonl:9-10: model call 1/2", "replay.override.json",
                               "bare list of entries"],
    "broken-json-line": ["session.jsonl:5: not valid JSON", "fix or remove this line"],
    "broken-packed-row": ["session.jsonl:5: malformed packed chunk row", "data.dt must be a list of 2",
                          "(got a list of 1)"],
    "broken-sidecar": [
        "replay.override.json: invalid override sidecar (8 problem(s))",
        "patch 0.entry.code: missing required key",
        "patch 1.at: must be an integer >= 0",
        "patch 2.entry.chunks[3]: chunk type 'text' is not one of",
        "patch 3.at: 1 is already patched by patch 2",
        "patch 3.entry.readyFile: must be a non-empty string",
        "patch 4.at: 2 is past the end of the derived primary script, which has 1 call(s)",
        "patch 4.entry: kind 'sleep' is not one of chunks, throw, hang",
        "patch 4.note: unknown key",
        'Entries are {"kind":"chunks"',
    ],
}


@pytest.mark.parametrize("name", BROKEN)
def test_validate_broken_samples_say_what_to_fix(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "validate", str(SAMPLES / name))
    assert (code, err) == (1, "")
    assert out.startswith(f"FAIL {SAMPLES / name}: 1 problem(s)")
    for fragment in BROKEN_EXPECT[name]:
        assert fragment in out
    assert "Traceback" not in out


def test_validate_all_samples(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate", *(str(SAMPLES / n) for n in GOOD))
    assert code == 0
    assert out.splitlines() == [f"ok   {SAMPLES / n}" for n in GOOD]
    code, out, _ = run(capsys, "validate", str(SAMPLES / "basic-chat"), str(SAMPLES / "broken-json-line"))
    assert code == 1
    assert out.splitlines()[0] == f"ok   {SAMPLES / 'basic-chat'}"
    assert "FAIL" in out


def test_validate_lists_problems_of_every_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_scenario(
        tmp_path,
        (header("p"), ["{bad"]),
        children=[(header("c"), call_events(1, 1, [{"type": "text-delta", "index": 0, "text": "cut"}]))],
        sidecar={"patches": [{"at": 0, "entry": {"kind": "nope"}}]},
    )
    code, out, _ = run(capsys, "validate", str(tmp_path))
    assert code == 1
    assert f"FAIL {tmp_path}: 3 problem(s)" in out
    assert "session.jsonl:2: not valid JSON" in out
    assert "session.1.jsonl" in out and "model call 1/1" in out and "applies only to the primary" in out
    assert "patch 0.entry: kind 'nope'" in out


def test_validate_child_respects_seed_length(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seeded = call_events(1, 1, [{"type": "text-delta", "index": 0, "text": "parent, cut"}])
    write_scenario(tmp_path, (header("p"), call_events(1, 1, text_chunks("x"))),
                   children=[(header("c", seed=1), seeded + call_events(2, 1, text_chunks("own")))])
    code, out, _ = run(capsys, "validate", str(tmp_path))
    assert (code, out.strip()) == (0, f"ok   {tmp_path}")


def test_validate_bare_list_ignores_primary_events(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    write_scenario(tmp_path, (header("p"), ["{not json"]), sidecar=[{"kind": "hang"}])
    code, out, _ = run(capsys, "validate", str(tmp_path))
    assert (code, out.strip()) == (0, f"ok   {tmp_path}")


@pytest.mark.parametrize(
    ("sidecar", "ok"),
    [(None, False), ({"patches": [{"at": 0, "entry": {"kind": "hang"}}]}, False),
     ([{"kind": "hang"}], True)],
)
def test_validate_without_a_primary_log(tmp_path: Path, sidecar: object, ok: bool,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    tmp_path.joinpath("notes.txt").write_text("not a log")
    if sidecar is not None:
        tmp_path.joinpath("replay.override.json").write_text(json.dumps(sidecar))
    code, out, _ = run(capsys, "validate", str(tmp_path))
    if ok:  # a bare-list sidecar replaces the primary script: the log need not exist
        assert (code, out.strip()) == (0, f"ok   {tmp_path}")
    else:
        assert code == 1
        assert "session.jsonl: the primary session log is missing" in out


@pytest.mark.parametrize("command", ["inspect", "validate"])
def test_missing_scenario(tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "nothing-here"
    code, out, err = run(capsys, command, str(target))
    assert code == 1
    text = out + err
    assert str(target) in text and "no such scenario directory" in text
    assert "Traceback" not in text


@pytest.mark.parametrize("argv", [[], ["inspect"], ["validate"], ["frobnicate"], ["inspect", "x", "--bogus"]])
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    assert "usage: dsh-replay" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "usage", "unknown"), [
    (["inspect", "x", "--bogus"], "usage: dsh-replay inspect [-h] [--json] scenario", "--bogus"),
    (["serve", "x", "--prot", "1"], "usage: dsh-replay serve [-h]", "--prot 1"),
    (["validate", "a", "--json", "b"], "usage: dsh-replay validate [-h] SCENARIO [SCENARIO ...]",
     "--json b"),
])
def test_an_unknown_option_shows_the_commands_usage(argv: list[str], usage: str, unknown: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(usage) and "COMMAND ..." not in err
    assert err.endswith(f"dsh-replay {argv[0]}: error: unrecognized arguments: {unknown}\n")


@pytest.mark.parametrize("where", ["build_parser", "handler"])
def test_ctrl_c_is_one_line_and_exit_130(monkeypatch: pytest.MonkeyPatch, where: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    # Ctrl-C while the command's modules still import (build_parser) or while it runs.
    import replay_engine.cli.dispatch as dispatch
    import replay_engine.scenario.check as check

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    if where == "build_parser":
        monkeypatch.setattr(dispatch, "build_parser", interrupted)
    else:
        monkeypatch.setattr(check, "check_scenario", interrupted)
    assert main(["validate", str(SAMPLES / "basic-chat")]) == 130
    assert capsys.readouterr().err == "dsh-replay: interrupted\n"


def test_installed_console_script() -> None:
    exe = shutil.which("dsh-replay")
    if exe is None:
        pytest.skip("dsh-replay is not installed (pip install -e '.[dev]')")
    ok = subprocess.run([exe, "inspect", str(SAMPLES / "basic-chat"), "--json"], capture_output=True,
                        text=True, timeout=120, check=False, cwd=ROOT)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout) == load_scenario(SAMPLES / "basic-chat").to_json()


def test_command_list_help_lines_are_the_ones_the_modules_register() -> None:
    """cli.py lists the subcommands without importing them; its lines must match theirs."""
    from replay_engine.cli.dispatch import SUBCOMMAND_MODULES, build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    registered = {c.dest: c.help for c in sub._choices_actions}  # type: ignore[attr-defined]
    for name, (_, help_line) in SUBCOMMAND_MODULES.items():
        assert registered[name] == help_line, name


@pytest.mark.parametrize(("argv", "loaded"), [
    (["--help"], []),
    (["validate", "--help"], []),
    (["serve", "--help"], ["pydantic", "replay_engine.server"]),
])
def test_start_up_imports_only_what_the_command_needs(argv: list[str], loaded: list[str]) -> None:
    heavy = ["pydantic", "anyio", "starlette", "uvicorn", "httpx", "msgspec", "replay_engine.models",
             "replay_engine.engine", "replay_engine.server", "replay_engine.scenario.derive"]
    code = ("import sys\nfrom replay_engine.cli.dispatch import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
            f"print('LOADED:' + ','.join(m for m in {heavy!r} if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    imported = [m for m in result.stdout.rsplit("LOADED:", 1)[1].strip().split(",") if m]
    assert set(loaded) <= set(imported)
    if not loaded:
        assert imported == []


def _process(*argv: str, module: str = "replay_engine.cli") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.mark.parametrize(("module", "prog"), [("replay_engine.cli", "dsh-replay"),
                                              ("dsh_replay_tui", "dsh-replay-tui")])
def test_version_comes_from_the_package_metadata(module: str, prog: str) -> None:
    from importlib.metadata import version

    result = _process("--version", module=module)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.strip() == f"{prog} {version('dsh-replay-tui')}"


def test_every_subcommand_help_describes_the_command() -> None:
    from replay_engine.cli.dispatch import SUBCOMMAND_MODULES, build_parser

    for name in SUBCOMMAND_MODULES:
        sub = next(a for a in build_parser(name)._actions if a.dest == "command")
        parser = sub.choices[name]  # type: ignore[attr-defined]
        assert parser.description and len(parser.description) > 40, name
        assert " ".join(parser.description.split()[:3]) in " ".join(parser.format_help().split()), name


def test_the_tui_help_names_the_default_port() -> None:
    result = _process("--help", module="dsh_replay_tui")
    assert result.returncode == 0, result.stderr
    assert "default 8765" in " ".join(result.stdout.split())


def test_validate_skips_paths_that_are_not_directories() -> None:
    readme = SAMPLES / "README.md"
    assert readme.is_file()
    result = _process("validate", str(SAMPLES / "basic-chat"), str(readme), str(SAMPLES / "retry"))
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines() == [f"ok   {SAMPLES / 'basic-chat'}",
                                          f"skip {readme}: not a directory",
                                          f"ok   {SAMPLES / 'retry'}"]
    everything = _process("validate", *sorted(str(p) for p in SAMPLES.iterdir()))
    assert everything.returncode == 1  # the broken-* samples still fail
    assert f"skip {readme}: not a directory" in everything.stdout
    assert "Traceback" not in everything.stdout + everything.stderr


def test_validate_with_only_non_directories_fails() -> None:
    result = _process("validate", str(SAMPLES / "README.md"))
    assert result.returncode == 1
    assert "none of the paths given is a scenario directory" in result.stderr
