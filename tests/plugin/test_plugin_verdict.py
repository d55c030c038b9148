"""The verdict in the plugin: strict replays, a stream the client left, a hang left in flight.

Each failure names the session, the call (numbered from 0, as the engine and the debugger
number them) and its recorded turn/step; only the unconsumed problems (docs/format.md#binding) say "not
consumed".
"""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import SAMPLES
from tests.plugin.plugintools import ANSWER, PLUGIN, run, section

STRICT_TESTS = f'''
    import pytest
    from agent import run_agent

    @pytest.mark.dsh_replay("scenarios/basic-chat", strict=True)
    def test_faithful_strict(dsh_replay):
        assert run_agent(dsh_replay.base_url) == {ANSWER!r}

    @pytest.mark.dsh_replay("scenarios/basic-chat", strict=True)
    def test_diverged_strict(dsh_replay):
        # every recorded call is asked for, but the tool answered something else
        assert run_agent(dsh_replay.base_url, tool_output="README.md\\nsetup.py") == {ANSWER!r}

    @pytest.mark.dsh_replay("scenarios/basic-chat")
    def test_diverged_by_position(dsh_replay):
        assert run_agent(dsh_replay.base_url, tool_output="README.md\\nsetup.py") == {ANSWER!r}
'''

STRICT_PROBLEM = ("the anonymous session: call #1 of script 0 (turn/step 1/2) left the recording "
                  "(strict): tool result call_ls_1: recorded 'README.md src', live 'README.md "
                  "setup.py'")


def test_strict_fails_a_diverged_replay_and_passes_a_faithful_one(
        project: pytest.Pytester) -> None:
    project.makepyfile(test_strict=STRICT_TESTS)
    result = run(project)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["PASSED test_strict.py::test_faithful_strict",
                                 "PASSED test_strict.py::test_diverged_by_position"],
                                consecutive=False)
    diverged = section(result, "test_diverged_strict")
    assert "dsh-replay: the replay of scenarios/basic-chat (run " in diverged
    assert f"  {STRICT_PROBLEM}" in diverged
    assert "not consumed" not in diverged  # every recorded call was consumed
    assert ("first divergence: the anonymous session: call #1 of script 0 (turn/step 1/2) in "
            "session.jsonl: tool result call_ls_1") in diverged
    assert "pytest --dsh-replay-debug test_strict.py::test_diverged_strict" in diverged


def test_the_strict_option_makes_every_test_strict(project: pytest.Pytester) -> None:
    project.makepyfile(test_strict=STRICT_TESTS)
    result = run(project, "--dsh-replay-strict")
    result.assert_outcomes(passed=1, failed=2)
    assert f"  {STRICT_PROBLEM}" in section(result, "test_diverged_by_position")
    result.stdout.fnmatch_lines(["PASSED test_strict.py::test_faithful_strict"], consecutive=False)


def test_a_stream_the_client_left_fails_naming_the_call(project: pytest.Pytester) -> None:
    project.makepyfile(test_cut='''
        import threading
        import httpx
        import openai
        import pytest
        from replay_engine.engine import events
        from agent import QUESTION

        @pytest.mark.dsh_replay("scenarios/basic-chat", consumed=False)
        def test_reads_one_chunk_and_leaves(dsh_replay):
            control = dsh_replay.anthropic_base_url + "/replay/v1"
            # the run serves one chunk at a time: the stream is still going when the client
            # leaves after its first chunk, whatever the machine's speed
            httpx.post(control + "/mode", json={"mode": "chunk"}).raise_for_status()
            left = threading.Event()
            dsh_replay.engine.subscribe(lambda event: left.set() if isinstance(
                event, events.CallCancelled) and event.run == dsh_replay.run else None,
                chunks=False)
            client = openai.OpenAI(base_url=dsh_replay.base_url, max_retries=0)
            stream = client.chat.completions.create(
                model="m", stream=True, messages=[{"role": "user", "content": QUESTION}])
            httpx.post(control + "/step", json={"how": "chunk"}).raise_for_status()
            next(iter(stream))
            stream.close()
            assert left.wait(30), "the server never saw the client leave"
    ''')
    result = run(project)
    result.assert_outcomes(failed=1)
    cut = section(result, "test_reads_one_chunk_and_leaves")
    assert ("  the anonymous session: call #0 of script 0 (turn/step 1/1) ended after 1 of its "
            "10 chunk(s): the client went away") in cut
    assert "not consumed" not in cut  # consumed=False: only the cut stream fails the test


def test_a_hang_left_in_flight_fails_naming_the_call(project: pytest.Pytester) -> None:
    hang = project.path / "scenarios" / "hang"
    shutil.copytree(SAMPLES / "basic-chat", hang)
    (hang / "replay.override.json").write_text(json.dumps(
        {"patches": [{"at": 1, "entry": {"kind": "hang", "readyFile": "hang.marker"}}]}))
    project.makepyfile(test_hang='''
        import threading
        import time
        import openai
        import pytest
        from agent import QUESTION

        @pytest.mark.dsh_replay("scenarios/hang")
        def test_leaves_a_hang_behind(dsh_replay):
            client = openai.OpenAI(base_url=dsh_replay.base_url, max_retries=0)
            ask = [{"role": "user", "content": QUESTION}]
            client.chat.completions.create(model="m", messages=ask)

            def hang():
                try:
                    client.chat.completions.create(model="m", messages=ask)
                except openai.APIError:
                    pass  # the run is freed after the test: the hang is cancelled then

            threading.Thread(target=hang, daemon=True).start()
            marker = dsh_replay.ready_dir / "hang.marker"
            deadline = time.monotonic() + 30
            while not marker.exists():
                assert time.monotonic() < deadline, "the hang never made its marker"
                time.sleep(0.01)
    ''')
    result = run(project)
    result.assert_outcomes(failed=1)
    left = section(result, "test_leaves_a_hang_behind")
    assert ("  the anonymous session: call #1 of script 0 (turn/step 1/2) is hanging until "
            "cancelled (still in flight)") in left
    assert "not consumed" not in left


def test_a_hang_the_client_gave_up_on_ends_cancelled_not_in_flight(
        project: pytest.Pytester) -> None:
    """The client's read timeout closes the hanging call just before the test ends: the report
    waits for the server to see it go (in process and over the socket), so the hang ends
    cancelled as over any connection, and the test fails with its own timeout alone."""
    shutil.copytree(SAMPLES / "hang-ready-file", project.path / "scenarios" / "hang")
    project.makepyfile(test_gives_up='''
        import httpx
        import pytest

        @pytest.mark.dsh_replay("scenarios/hang")
        def test_times_out(dsh_replay):
            body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
            with httpx.Client(timeout=0.5) as client:
                for _ in range(2):
                    with client.stream("POST", dsh_replay.base_url + "/chat/completions",
                                       json=body) as answer:
                        for _ in answer.iter_lines():
                            pass
    ''')
    for transport in ((), ("--dsh-replay-socket",)):
        result = run(project, *transport)
        result.assert_outcomes(failed=1)
        report = section(result, "test_times_out")
        assert "ReadTimeout" in report, report
        assert "in flight" not in report and "hanging" not in report, report
        assert "dsh-replay: the replay of" not in report, report


def test_an_interrupted_test_is_not_held_for_its_report(project: pytest.Pytester) -> None:
    """Ctrl-C during a hang: pytest stops at once (no report is shown, so none is waited for;
    the grace for calls in flight is made far longer than the run's deadline here)."""
    shutil.copytree(SAMPLES / "hang-ready-file", project.path / "scenarios" / "hang")
    project.makeconftest('''
        from replay_engine.testing import scenario_run

        scenario_run.SETTLE_S = 600.0
    ''')
    project.makepyfile(test_interrupted='''
        import threading
        import time
        import openai
        import pytest

        @pytest.mark.dsh_replay("scenarios/hang")
        def test_ctrl_c_in_a_hang(dsh_replay):
            client = openai.OpenAI(base_url=dsh_replay.base_url, max_retries=0)
            ask = [{"role": "user", "content": "hi"}]
            client.chat.completions.create(model="m", messages=ask)

            def hang():
                try:
                    client.chat.completions.create(model="m", messages=ask)
                except openai.APIError:
                    pass  # the run is freed on the way out: the hang is cancelled then

            threading.Thread(target=hang, daemon=True).start()
            marker = dsh_replay.ready_dir / "hang-ready.marker"
            deadline = time.monotonic() + 30
            while not marker.exists():
                assert time.monotonic() < deadline, "the hang never made its marker"
                time.sleep(0.01)
            raise KeyboardInterrupt  # as Ctrl-C does, while the hang is in flight
    ''')
    result = project.runpytest_subprocess(*PLUGIN, timeout=90)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*KeyboardInterrupt*"])
