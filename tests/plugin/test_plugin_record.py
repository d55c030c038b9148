"""Recording from pytest: the record modes, where a scenario lives by default, and re-recording
that never changes a committed scenario unless the new recording succeeded.

The provider is a scripted fake on a thread of this process (``URL/ok`` answers a text,
``/auth`` 401, ``/rate`` 429, ``/broken`` a stream that breaks off, ``/hang`` nothing).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys

import pytest

from tests.plugin.plugintools import (
    KEY,
    PLUGIN,
    RECORDED,
    XDIST,
    ThreadedUpstream,
    files_of,
    run,
    section,
)

ONE_CALL = f'''
    import openai
    import pytest
    from agent import ask

    @pytest.mark.dsh_replay("scenarios/basic-chat")
    def test_one_call(dsh_replay):
        try:
            assert ask(dsh_replay.base_url, "hi") == {RECORDED!r}
        except openai.APIError:
            pass  # the agent copes with a failed call; its recording failed all the same
'''


@pytest.fixture(autouse=True)
def real_key(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Recording sends the key the environment has (it must never reach a file)."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def no_key_in(directory: os.PathLike[str]) -> None:
    for name, data in files_of(directory).items():  # type: ignore[arg-type]
        assert KEY.encode() not in data, name


def test_record_options_are_checked(project: pytest.Pytester) -> None:
    for args, message in [
        (("--dsh-replay-record=all",), "*--dsh-replay-record needs --dsh-replay-upstream URL*"),
        (("--dsh-replay-upstream", "http://127.0.0.1:1"),
         "*--dsh-replay-upstream is used only when recording*"),
        (("--dsh-replay-record=none", "--dsh-replay-upstream", "http://127.0.0.1:1"),
         "*--dsh-replay-upstream is used only when recording*"),
        (("--dsh-replay-record=once", "--dsh-replay-upstream", "api.openai.com"),
         "*--dsh-replay-upstream 'api.openai.com': give the provider's base URL*"),
        (("--dsh-replay-record-failures",),
         "*--dsh-replay-record-failures keeps recordings whose calls or test failed; add *"),
        (("--dsh-replay-break", "0:1"), "*--dsh-replay-break sets breakpoints of the debugger*"),
        (("--dsh-replay-debug", "--dsh-replay-break", "one"),
         "*--dsh-replay-break 'one': a breakpoint is SCRIPT:CALL*"),
        (("--dsh-replay-debug", "--dsh-replay-record=once", "--dsh-replay-upstream", "http://x"),
         "*--dsh-replay-debug replays; it cannot be combined with --dsh-replay-record*"),
    ]:
        result = project.runpytest_subprocess(*PLUGIN, *args, timeout=60)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, args
        result.stderr.fnmatch_lines([message])


@pytest.mark.parametrize("spelling", ["once", "missing"])
def test_once_records_only_what_is_missing(project: pytest.Pytester,
                                           fake_upstream: ThreadedUpstream, spelling: str) -> None:
    project.makepyfile(test_rec=f'''
        import pytest
        from agent import ask, run_agent

        @pytest.mark.dsh_replay("scenarios/fresh")
        def test_fresh(dsh_replay):
            assert ask(dsh_replay.base_url, "hi") == {RECORDED!r}

        @pytest.mark.dsh_replay("scenarios/basic-chat")
        def test_existing(dsh_replay):
            assert run_agent(dsh_replay.base_url).endswith("Hello!")
    ''')
    existing = files_of(project.path / "scenarios" / "basic-chat")
    result = run(project, f"--dsh-replay-record={spelling}",
                 "--dsh-replay-upstream", fake_upstream.url())
    result.assert_outcomes(passed=2)
    assert len(fake_upstream.requests) == 1  # only the fresh scenario went upstream
    assert files_of(project.path / "scenarios" / "basic-chat") == existing
    fresh = project.path / "scenarios" / "fresh"
    assert sorted(files_of(fresh)) == ["session.jsonl"]
    assert sorted(p.name for p in fresh.parent.iterdir()) == ["basic-chat", "fresh"]  # no attempt
    no_key_in(fresh)
    run(project).assert_outcomes(passed=2)  # none, the default: replay only, keyless
    assert len(fake_upstream.requests) == 1


def test_what_was_recorded_is_listed_after_the_results(project: pytest.Pytester,
                                                       fake_upstream: ThreadedUpstream) -> None:
    """Without -rA a passing test's notes are not shown: the summary lists them, also those
    of xdist workers."""
    pytest.importorskip("xdist")
    project.makepyfile(test_rec=f'''
        import pytest
        from agent import ask

        @pytest.mark.dsh_replay
        @pytest.mark.parametrize("n", range(2))
        def test_fresh(dsh_replay, n):
            assert ask(dsh_replay.base_url, "hi") == {RECORDED!r}
    ''')
    for workers in ((), (*XDIST, "-n", "2")):
        for leftover in (project.path / "scenarios").glob("test_rec"):
            shutil.rmtree(leftover)
        result = project.runpytest_subprocess(*PLUGIN, *workers, "--dsh-replay-record=once",
                                              "--dsh-replay-upstream", fake_upstream.url(),
                                              timeout=110)
        result.assert_outcomes(passed=2)
        text = result.stdout.str()
        listed = text[text.index("dsh-replay recordings"):].splitlines()
        assert sorted(line for line in listed if line.startswith("dsh-replay: recorded")) == [
            "dsh-replay: recorded scenarios/test_rec/test_fresh[0]",
            "dsh-replay: recorded scenarios/test_rec/test_fresh[1]"], text
    replayed = project.runpytest_subprocess(*PLUGIN, timeout=110)
    replayed.assert_outcomes(passed=2)
    assert "dsh-replay recordings" not in replayed.stdout.str()
    shutil.rmtree(project.path / "scenarios" / "test_rec")
    shown = run(project, "--dsh-replay-record=once", "--dsh-replay-upstream", fake_upstream.url())
    shown.assert_outcomes(passed=2)  # -rA shows each note with its test: not twice
    assert "dsh-replay recordings" not in shown.stdout.str()
    assert shown.stdout.str().count("dsh-replay: recorded scenarios/test_rec/test_fresh[0]") == 1


def test_all_rerecords_and_backups_never_overwrite_one_another(
        project: pytest.Pytester, fake_upstream: ThreadedUpstream) -> None:
    project.makepyfile(test_rec=ONE_CALL)
    scenario = project.path / "scenarios" / "basic-chat"
    original = (scenario / "session.jsonl").read_bytes()
    run(project, "--dsh-replay-upstream", fake_upstream.url(), "--dsh-replay-record") \
        .assert_outcomes(passed=1)
    first = (scenario / "session.jsonl").read_bytes()
    assert first != original and (scenario / "session.jsonl.bak.1").read_bytes() == original
    result = run(project, "--dsh-replay-record=rewrite", "--dsh-replay-upstream",
                 fake_upstream.url())
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*dsh-replay: recorded scenarios/basic-chat; the previous files "
                                 "are kept as session.jsonl.bak.2*"])
    assert (scenario / "session.jsonl.bak.1").read_bytes() == original
    assert (scenario / "session.jsonl.bak.2").read_bytes() == first
    assert len(fake_upstream.requests) == 2
    run(project).assert_outcomes(passed=1)


@pytest.mark.parametrize(("route", "code"), [("auth", "AUTH"), ("rate", "RATE_LIMIT"),
                                             ("broken", "NETWORK")])
def test_a_failed_rerecord_leaves_the_scenario_and_names_the_attempt(
        project: pytest.Pytester, fake_upstream: ThreadedUpstream, route: str, code: str) -> None:
    # a 401 fails the test by itself; the others are swallowed by the agent
    source = ONE_CALL if route != "auth" else ONE_CALL.replace("openai.APIError", "KeyError")
    project.makepyfile(test_rec=source)
    scenario = project.path / "scenarios" / "basic-chat"
    before = files_of(scenario)
    result = run(project, "--dsh-replay-record=all", "--dsh-replay-upstream",
                 fake_upstream.url(route))
    result.assert_outcomes(failed=1)
    text = section(result, "test_one_call")
    assert "dsh-replay: the recording of scenarios/basic-chat failed, so the scenario is " \
           "unchanged:" in text
    assert f"session.jsonl call #0 (turn/step 1/1, the anonymous session) failed upstream: " \
           f"{code}: " in text
    assert ("the failed attempt is kept in scenarios/basic-chat.recording-1 (read it, then "
            "delete it); record again, or pass --dsh-replay-record-failures") in text
    assert files_of(scenario) == before  # byte for byte, and no backup either
    attempt = project.path / "scenarios" / "basic-chat.recording-1"
    assert (attempt / "session.jsonl").is_file()
    no_key_in(attempt)
    if route == "rate":  # a second failed attempt is kept beside the first
        again = run(project, "--dsh-replay-record=all", "--dsh-replay-upstream",
                    fake_upstream.url(route))
        assert "kept in scenarios/basic-chat.recording-2" in section(again, "test_one_call")
        assert files_of(scenario) == before
        assert (attempt / "session.jsonl").is_file()


def test_record_failures_keeps_a_failed_recording_when_asked(
        project: pytest.Pytester, fake_upstream: ThreadedUpstream) -> None:
    project.makepyfile(test_rec=ONE_CALL)
    scenario = project.path / "scenarios" / "basic-chat"
    original = (scenario / "session.jsonl").read_bytes()
    result = run(project, "--dsh-replay-record=all", "--dsh-replay-record-failures",
                 "--dsh-replay-upstream", fake_upstream.url("rate"))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*was kept as asked (--dsh-replay-record-failures) although: "
                                 "session.jsonl call #0 (turn/step 1/1, the anonymous session) "
                                 "failed upstream: RATE_LIMIT*"])
    assert (scenario / "session.jsonl.bak.1").read_bytes() == original
    decided = json.loads((scenario / "replay.override.json").read_text())
    assert [(e["kind"], e["code"]) for e in decided] == [("throw", "RATE_LIMIT")]
    assert not list(scenario.parent.glob("*.recording-*"))
    run(project).assert_outcomes(passed=1)  # the replay answers the 429 the agent copes with


def test_a_killed_recording_leaves_the_scenario_untouched(
        project: pytest.Pytester, fake_upstream: ThreadedUpstream) -> None:
    project.makepyfile(test_rec=ONE_CALL)
    scenario = project.path / "scenarios" / "basic-chat"
    before = files_of(scenario)
    proc = project.popen([sys.executable, "-m", "pytest", *PLUGIN, "--dsh-replay-record=all",
                          "--dsh-replay-upstream", fake_upstream.url("hang")],
                         stdout=sys.stdout, stderr=sys.stderr)
    try:
        fake_upstream.wait_for_requests(1)  # the call is in flight through the recorder
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(30)
    assert files_of(scenario) == before
    attempt = project.path / "scenarios" / "basic-chat.recording-1"
    assert attempt.is_dir()  # what the killed run had, for the user to look at
    # A later re-record is not in the way of the killed one, and keeps the old scenario too.
    run(project, "--dsh-replay-record=all", "--dsh-replay-upstream", fake_upstream.url("ok")) \
        .assert_outcomes(passed=1)
    assert (scenario / "session.jsonl.bak.1").read_bytes() == before["session.jsonl"]
    assert attempt.is_dir() and not (scenario.parent / "basic-chat.recording-2").exists()


def test_default_locations_follow_the_module_and_the_test(
        project: pytest.Pytester, fake_upstream: ThreadedUpstream) -> None:
    project.makepyfile(test_loc=f'''
        import pytest
        from agent import ask

        @pytest.mark.dsh_replay
        def test_plain(dsh_replay):
            assert ask(dsh_replay.base_url, "plain") == {RECORDED!r}

        class TestAgent:
            @pytest.mark.dsh_replay
            @pytest.mark.parametrize("n", [1])
            def test_in_class(self, dsh_replay, n):
                assert ask(dsh_replay.base_url, "classy") == {RECORDED!r}
    ''')
    result = run(project)
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*cannot serve scenarios/test_loc/test_plain: "
                                 "[[]SCENARIO_NOT_FOUND[]]*",
                                 "*record it first: pytest --dsh-replay-record=once*"])
    run(project, "--dsh-replay-record=once", "--dsh-replay-upstream", fake_upstream.url()) \
        .assert_outcomes(passed=2)
    assert (project.path / "scenarios/test_loc/test_plain/session.jsonl").is_file()
    assert (project.path / "scenarios/test_loc/TestAgent.test_in_class[1]/session.jsonl").is_file()
    run(project).assert_outcomes(passed=2)
    # The ini moves the root (relative to the ini file).
    ini = project.path / "pytest.ini"
    ini.write_text(ini.read_text().rstrip() + "\ndsh_replay_scenario_dir = recorded\n")
    run(project, "--dsh-replay-record=once", "--dsh-replay-upstream", fake_upstream.url()) \
        .assert_outcomes(passed=2)
    assert (project.path / "recorded/test_loc/test_plain/session.jsonl").is_file()


def test_a_first_recording_of_nothing_leaves_no_folders(
        project: pytest.Pytester, fake_upstream: ThreadedUpstream) -> None:
    """A test recorded for the first time that sends no call fails saying so, and the default
    location's folders made for it go again; a folder that was there before stays."""
    before = sorted(p.name for p in (project.path / "scenarios").iterdir())
    project.makepyfile(test_quiet='''
        import pytest

        @pytest.mark.dsh_replay
        def test_silent(dsh_replay):
            pass
    ''')
    result = run(project, "--dsh-replay-record=once", "--dsh-replay-upstream", fake_upstream.url())
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*recorded nothing: the test sent no model call*"])
    assert sorted(p.name for p in (project.path / "scenarios").iterdir()) == before
    assert "test_quiet" not in before


def test_every_mode_under_xdist(project: pytest.Pytester, fake_upstream: ThreadedUpstream) -> None:
    pytest.importorskip("xdist")
    project.makepyfile(test_modes=f'''
        import os
        import pytest
        from agent import ask

        @pytest.mark.dsh_replay
        @pytest.mark.parametrize("n", range(4))
        def test_param(dsh_replay, n):
            with open(f"worker-{{n}}.txt", "w") as note:
                note.write(os.environ.get("PYTEST_XDIST_WORKER", "main"))
            assert ask(dsh_replay.base_url, f"question {{n}}") == {RECORDED!r}
            if os.environ.get("TEST_SECOND_CALL"):
                assert ask(dsh_replay.base_url, f"follow-up {{n}}") == {RECORDED!r}
    ''')
    root = project.path / "scenarios" / "test_modes"
    upstream = ("--dsh-replay-upstream", fake_upstream.url())
    run(project, *XDIST, "-n", "2", "--dsh-replay-record=once", *upstream) \
        .assert_outcomes(passed=4)
    assert {(project.path / f"worker-{n}.txt").read_text() for n in range(4)} == {"gw0", "gw1"}
    assert sorted(p.name for p in root.iterdir()) == [f"test_param[{n}]" for n in range(4)]
    assert len(fake_upstream.requests) == 4
    run(project, *XDIST, "-n", "2").assert_outcomes(passed=4)
    run(project, *XDIST, "-n", "2", "--dsh-replay-record=all", *upstream) \
        .assert_outcomes(passed=4)
    assert all((root / f"test_param[{n}]" / "session.jsonl.bak.1").is_file() for n in range(4))
    assert len(fake_upstream.requests) == 8
    os.environ["TEST_SECOND_CALL"] = "1"  # pytester restores the environment afterwards
    result = run(project, *XDIST, "-n", "2", "--dsh-replay-record=new_episodes", *upstream)
    result.assert_outcomes(passed=4)
    assert len(fake_upstream.requests) == 12  # only the follow-ups went upstream
    run(project, *XDIST, "-n", "2").assert_outcomes(passed=4)
    assert not list(root.glob("*.recording-*"))
