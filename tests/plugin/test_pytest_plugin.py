"""The pytest plugin, run by pytest on generated test files whose agents use the openai SDK."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SAMPLES

INI = """[pytest]
addopts = -p no:cacheprovider -p no:benchmark
filterwarnings =
    error
    ignore::DeprecationWarning:websockets.*
    ignore::DeprecationWarning:uvicorn.*
"""

AGENT = '''
"""A small agent with a real tool loop on the openai SDK."""
import openai

QUESTION = "What files are in the workspace? Then say hello."


def run_agent(base_url, tool_output="README.md\\nsrc\\n", follow_up=None, stream=False):
    client = openai.OpenAI(base_url=base_url, api_key="test-key", max_retries=0)
    messages = [{"role": "user", "content": QUESTION}]
    while True:
        if stream:
            with client.chat.completions.stream(model="m", messages=messages) as s:
                message = s.get_final_completion().choices[0].message
        else:
            message = client.chat.completions.create(model="m", messages=messages).choices[0].message
        messages.append({"role": "assistant", "content": message.content or "",
                         **({"tool_calls": [c.model_dump() for c in message.tool_calls]}
                            if message.tool_calls else {})})
        if not message.tool_calls:
            break
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": tool_output})
    if follow_up is not None:
        messages.append({"role": "user", "content": follow_up})
        client.chat.completions.create(model="m", messages=messages)
    return message.content
'''

ANSWER = "The workspace has README.md and src. Hello!"


PLUGIN = ("-p", "replay_engine.testing.pytest_plugin")
XDIST = ("-p", "xdist.plugin")


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A test project holding the agent and a copy of the basic-chat sample.

    Its pytest runs load only the plugins a test names (the installed ones take seconds to
    load); the first test shows the plugin also arrives through its ``pytest11`` entry point.
    """
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makefile(".ini", pytest=INI)
    pytester.makepyfile(agent=AGENT)
    shutil.copytree(SAMPLES / "basic-chat", pytester.path / "scenarios" / "basic-chat")
    return pytester


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest_subprocess(*PLUGIN, "-rA", *args, timeout=110)


def section(result: pytest.RunResult, test: str) -> str:
    """The failure text pytest printed for one test (from its header to the next one)."""
    text = result.stdout.str()
    start = text.index(f"_ {test} _")
    ends = [i for i in (text.find("\n___", start + 1), text.find("\n===", start + 1)) if i != -1]
    return text[start:min(ends)]


def test_a_marked_replay_passes_and_leaves_nothing_bound(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    project.makepyfile(test_agent=f'''
        import os
        import openai
        import pytest
        from agent import run_agent
        from replay_engine.testing.pytest_plugin import run_id

        @pytest.mark.dsh_replay("scenarios/basic-chat")
        def test_streamed(dsh_replay):
            assert run_agent(dsh_replay.base_url, stream=True) == {ANSWER!r}
            run = dsh_replay.run
            assert run == run_id("test_agent.py::test_streamed")
            assert dsh_replay.base_url.endswith(f"/runs/{{run}}/v1")
            assert dsh_replay.anthropic_base_url == dsh_replay.base_url[:-len("/v1")]
            assert os.environ["OPENAI_BASE_URL"] == dsh_replay.base_url
            assert dsh_replay.engine.state(run).consumed

        @pytest.mark.dsh_replay("scenarios/basic-chat")
        def test_unrequested_fixture_still_points_the_sdk():
            # no fixture asked for: the environment points a default client at the run
            client = openai.OpenAI(max_retries=0)
            first = client.chat.completions.create(
                model="m", messages=[{{"role": "user", "content": "What files"}}])
            assert first.choices[0].message.tool_calls[0].function.name == "bash"
            client.chat.completions.create(model="m", messages=[])

        def test_served_in_the_body_after_the_others(dsh_replay):
            replay = dsh_replay.serve("scenarios/basic-chat")
            assert run_agent(replay.base_url) == {ANSWER!r}
            engine = replay.engine
            # the earlier tests' runs were freed at their teardown
            for name in ("test_streamed", "test_unrequested_fixture_still_points_the_sdk"):
                assert engine.state(run_id("test_agent.py::" + name)).bindings == ()
            assert "OPENAI_API_KEY" not in os.environ or os.environ["OPENAI_API_KEY"]
    ''')
    project._monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD")  # the entry point loads it
    result = project.runpytest_subprocess("-p", "no:randomly", timeout=110)
    result.assert_outcomes(passed=3)


def test_unconsumed_calls_fail_unless_opted_out_and_name_the_debugger_command(
        project: pytest.Pytester) -> None:
    project.makepyfile(test_partial='''
        import openai
        import pytest

        @pytest.mark.dsh_replay("scenarios/basic-chat")
        def test_stops_early(dsh_replay):
            client = openai.OpenAI(base_url=dsh_replay.base_url, api_key="k", max_retries=0)
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])

        @pytest.mark.dsh_replay("scenarios/basic-chat")
        def test_never_calls():
            pass

        @pytest.mark.dsh_replay("scenarios/basic-chat")
        def test_asserts_wrongly(dsh_replay):
            assert dsh_replay.run == "something else"

        def one_call(base_url):
            client = openai.OpenAI(base_url=base_url, api_key="k", max_retries=0)
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])

        @pytest.mark.dsh_replay("scenarios/basic-chat", consumed=False)
        def test_marker_opt_out(dsh_replay):
            one_call(dsh_replay.base_url)

        @pytest.mark.dsh_replay("scenarios/basic-chat")
        def test_fixture_opt_out(dsh_replay):
            one_call(dsh_replay.base_url)
            dsh_replay.allow_unconsumed()

        def test_serve_opt_out(dsh_replay):
            one_call(dsh_replay.serve("scenarios/basic-chat", consumed=False).base_url)

        @pytest.mark.dsh_replay("scenarios/basic-chat", consumed="no")
        def test_bad_option():
            pass

        @pytest.mark.dsh_replay("scenarios/not-recorded-yet")
        def test_needs_a_recording(dsh_replay):
            pass
    ''')
    result = run(project)
    result.assert_outcomes(failed=3, passed=3, errors=2)
    result.stdout.fnmatch_lines(["PASSED test_partial.py::test_marker_opt_out",
                                 "PASSED test_partial.py::test_fixture_opt_out",
                                 "PASSED test_partial.py::test_serve_opt_out"], consecutive=False)
    result.stdout.fnmatch_lines(["*dsh_replay consumed= must be True or False*"])
    result.stdout.fnmatch_lines([
        "*dsh-replay: cannot serve scenarios/not-recorded-yet: [[]SCENARIO_NOT_FOUND[]]*",
        "*record it first: pytest --dsh-replay-record=missing --dsh-replay-upstream URL*",
    ])
    early = section(result, "test_stops_early")
    assert "not consumed: the anonymous session consumed 1/2 recorded call(s)" in early
    assert ("first divergence: model call #1 of the anonymous session (turn/step 1/1, "
            "session.jsonl): user message 1: recorded 'What files are in the workspace? "
            "Then say hello.', live 'hi'") in early
    assert "open the scenario in the debugger: dsh-replay-tui scenarios/basic-chat" in early
    assert "pytest --dsh-replay-debug test_partial.py::test_stops_early" in early
    never = section(result, "test_never_calls")
    assert "not consumed: 1 recorded script(s) never bound to a live session" in never
    # A test failing by itself keeps its own failure; the replay's account comes beside it.
    wrong = section(result, "test_asserts_wrongly")
    assert "E       AssertionError" in wrong
    own, beside = wrong.split("Captured dsh-replay call")
    assert "Failed: dsh-replay" not in own and "not consumed" not in own
    assert "not consumed: 1 recorded script(s) never bound" in beside
    assert "dsh-replay-tui scenarios/basic-chat" in beside


def test_a_binding_error_names_the_call_its_turn_step_and_the_diff(project: pytest.Pytester) -> None:
    project.makepyfile(test_binding='''
        import openai
        import pytest
        from agent import run_agent

        @pytest.mark.dsh_replay("scenarios/basic-chat")
        def test_one_call_too_many(dsh_replay):
            run_agent(dsh_replay.base_url, tool_output="README.md\\nsetup.py", follow_up="And now?")

        @pytest.mark.dsh_replay("scenarios/basic-chat")
        def test_error_swallowed_by_the_agent(dsh_replay):
            try:
                run_agent(dsh_replay.base_url, follow_up="Thanks!")
            except openai.ConflictError:
                pass

        @pytest.mark.dsh_replay("scenarios/basic-chat", consumed=False)
        def test_a_second_session(dsh_replay):
            client = openai.OpenAI(base_url=dsh_replay.base_url, api_key="k", max_retries=0)
            ask = [{"role": "user", "content": "What files are in the workspace?"}]
            client.chat.completions.create(model="m", messages=ask,
                                           extra_headers={"X-Session-Id": "main"})
            with pytest.raises(openai.ConflictError):
                client.chat.completions.create(model="m", messages=[
                    {"role": "system", "content": "You are a helper."},
                    {"role": "user", "content": "Summarise src/"}],
                    extra_headers={"X-Session-Id": "helper"})
    ''')
    result = run(project)
    result.assert_outcomes(failed=3)
    extra = section(result, "test_one_call_too_many")
    assert "ConflictError" in extra  # the test's own failure, then the replay's account of it
    assert "binding error SCRIPT_EXHAUSTED: script exhausted — session requested model call #3 " \
           "but its script has only 2" in extra
    assert ("call: model call #3 of the anonymous session (script 0, session.jsonl): past the "
            "recording, its last recorded call is #2 (turn/step 1/2)") in extra
    assert ("diff: user message 1: the live request has 'And now?', which the recording does "
            "not have here") in extra
    assert ("first divergence: model call #2 of the anonymous session (turn/step 1/2, "
            "session.jsonl): tool result call_ls_1: recorded 'README.md src', "
            "live 'README.md setup.py'") in extra
    swallowed = section(result, "test_error_swallowed_by_the_agent")
    result.stdout.fnmatch_lines(["FAILED test_binding.py::test_error_swallowed_by_the_agent - "
                                 "Failed: dsh-repl*"])
    assert "ConflictError" not in swallowed
    assert ("diff: user message 1: the live request has 'Thanks!', which the recording does "
            "not have here") in swallowed
    assert "first divergence" not in swallowed  # the recorded calls were asked as recorded
    second = section(result, "test_a_second_session")
    assert "binding error UNRECORDED_SESSION: a model call arrived from an unrecorded session " \
           "(#2); the scenario recorded only 1 session(s)" in second
    assert ("call: the first model call of session helper; the recorded sessions (session.jsonl) "
            "are all bound already") in second
    assert ("diff: user message 1: the live request has 'Summarise src/', which the recording "
            "does not have here") in second


def test_xdist_workers_and_tests_each_replay_in_their_own_run(project: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    project.makepyfile(test_parallel='''
        import json
        import os
        import pytest
        from agent import run_agent

        def note(dsh_replay, name):
            worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
            server = dsh_replay.base_url.split("/runs/")[0]
            with open(f"seen-{name}.json", "w") as handle:
                json.dump({"worker": worker, "server": server, "run": dsh_replay.run}, handle)

        @pytest.mark.dsh_replay("scenarios/basic-chat")
        @pytest.mark.parametrize("n", range(6))
        def test_whole_session(dsh_replay, n):
            assert run_agent(dsh_replay.base_url, stream=n % 2 == 0).endswith("Hello!")
            state = dsh_replay.engine.state(dsh_replay.run)
            assert [(b.cursor, b.length) for b in state.bindings] == [(2, 2)]
            note(dsh_replay, n)
    ''')
    result = run(project, *XDIST, "-n", "2")
    result.assert_outcomes(passed=6)
    seen = [json.loads((project.path / f"seen-{n}.json").read_text()) for n in range(6)]
    workers = {s["worker"] for s in seen}
    assert workers == {"gw0", "gw1"}
    for worker in workers:  # one server per worker, shared by its tests
        assert len({s["server"] for s in seen if s["worker"] == worker}) == 1
    assert len({s["server"] for s in seen}) == 2
    assert len({s["run"] for s in seen}) == 6


def test_hang_ready_files_go_to_each_tests_own_directory(project: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    shutil.copytree(SAMPLES / "hang-ready-file", project.path / "scenarios" / "hang")
    project.makepyfile(test_hangs='''
        import threading
        import time
        import httpx
        import openai
        import pytest

        @pytest.mark.dsh_replay("scenarios/hang")
        @pytest.mark.parametrize("n", range(4))
        def test_hang_then_cancel(dsh_replay, tmp_path, n):
            client = openai.OpenAI(base_url=dsh_replay.base_url, api_key="k", max_retries=0)
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}])
            errors = []

            def hang():
                try:
                    client.chat.completions.create(model="m", stream=False,
                                                   messages=[{"role": "user", "content": "b"}])
                except openai.APIError as exc:
                    errors.append(exc)

            waiter = threading.Thread(target=hang)
            waiter.start()
            marker = dsh_replay.ready_dir / "hang-ready.marker"
            assert dsh_replay.ready_dir.parent == tmp_path
            deadline = time.monotonic() + 30
            while not marker.exists():
                assert time.monotonic() < deadline, "the hang never made its marker"
                time.sleep(0.01)
            httpx.post(dsh_replay.base_url[:-len("/v1")] + "/replay/v1/cancel", json={})
            waiter.join(30)
            assert errors and not waiter.is_alive()
    ''')
    result = run(project, *XDIST, "-n", "2")
    result.assert_outcomes(passed=4)
    assert not list(project.path.glob("*.marker"))  # none in the shared working directory


def test_record_options_are_checked(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(*PLUGIN, "--dsh-replay-record=all", timeout=60)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--dsh-replay-record needs --dsh-replay-upstream URL*"])
    result = project.runpytest_subprocess(*PLUGIN, "--dsh-replay-upstream", "http://127.0.0.1:1",
                                          timeout=60)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--dsh-replay-upstream is used only when recording*"])


DEBUG_TESTS = '''
    import signal
    import openai
    import pytest
    from agent import run_agent

    @pytest.fixture
    def quit_debugger(dsh_replay):
        """Quits the debugger after the plugin's checks, as the user would."""
        yield
        dsh_replay.debugger.process.send_signal(signal.SIGINT)

    @pytest.mark.dsh_replay("scenarios/basic-chat")
    def test_whole(dsh_replay, quit_debugger):
        assert dsh_replay.engine is None and dsh_replay.run == "default"
        assert dsh_replay.base_url.endswith("/runs/default/v1")
        assert run_agent(dsh_replay.base_url) == {answer!r}

    @pytest.mark.dsh_replay("scenarios/basic-chat")
    def test_partial(dsh_replay, quit_debugger):
        client = openai.OpenAI(base_url=dsh_replay.base_url, api_key="k", max_retries=0)
        client.chat.completions.create(model="m", messages=[{{"role": "user", "content": "hi"}}])
'''


def test_debug_mode_serves_each_test_from_a_debugger_process(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # The debugger needs a terminal; `dsh-replay serve` takes the same --port 0 --url-file
    # arguments and stands in for it here.
    monkeypatch.setenv("DSH_REPLAY_DEBUGGER",
                       shlex.join([sys.executable, "-m", "replay_engine.cli", "serve"]))
    project.makepyfile(test_debug=DEBUG_TESTS.format(answer=ANSWER))
    result = run(project, "--dsh-replay-debug")
    result.assert_outcomes(passed=1, failed=1)
    partial = section(result, "test_partial")
    assert "dsh-replay: the replay of scenarios/basic-chat (run default) failed:" in partial
    assert "not consumed: the anonymous session consumed 1/2 recorded call(s)" in partial
    assert 'first divergence: model call #1 of the anonymous session' in partial


def test_debug_mode_refuses_xdist(project: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    result = project.runpytest_subprocess(*PLUGIN, *XDIST, "--dsh-replay-debug", "-n", "2",
                                          timeout=60)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--dsh-replay-debug opens the debugger on this terminal*"])


def test_a_debugger_that_cannot_start_is_a_clear_error(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DSH_REPLAY_DEBUGGER", shlex.join([sys.executable, "-c", "exit(5)"]))
    project.makepyfile(test_debug=DEBUG_TESTS.format(answer=ANSWER))
    result = run(project, "--dsh-replay-debug", "-k", "test_whole")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the debugger exited (status 5) before it served the scenario*"])


# -- recording ------------------------------------------------------------------------------


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[str]:
    """``dsh-replay serve`` of basic-chat standing in for a provider."""
    url_file = tmp_path / "upstream.url"
    proc = subprocess.Popen([sys.executable, "-m", "replay_engine.cli", "serve",
                             str(SAMPLES / "basic-chat"), "--port", "0", "--url-file", str(url_file)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not url_file.is_file():
            assert proc.poll() is None, "the upstream server exited"
            assert time.monotonic() < deadline, "the upstream server wrote no URL file"
            time.sleep(0.02)
        yield url_file.read_text().strip()
    finally:
        proc.terminate()
        proc.wait(30)


RECORD_TESTS = '''
    import os
    import httpx
    import pytest
    from agent import run_agent

    @pytest.fixture(autouse=True)
    def fresh_upstream():
        """The stand-in provider answers each test's session from its first recorded call
        (a reset also empties its journal: the calls so far are tallied first)."""
        upstream = os.environ["TEST_UPSTREAM"]
        calls = len(httpx.get(upstream + "/replay/v1/journal").json()["calls"])
        with open(os.environ["TEST_UPSTREAM_TALLY"], "a") as tally:
            tally.write(str(calls) + " ")
        httpx.post(upstream + "/replay/v1/reset")

    @pytest.mark.dsh_replay("scenarios/fresh")
    def test_fresh(dsh_replay):
        assert run_agent(dsh_replay.base_url) == {answer!r}

    @pytest.mark.dsh_replay("scenarios/basic-chat")
    def test_existing(dsh_replay):
        assert run_agent(dsh_replay.base_url) == {answer!r}
'''


def _upstream_calls(url: str) -> int:
    """Calls the stand-in provider answered: those tallied before each reset, and the rest."""
    import httpx

    tally = Path(os.environ["TEST_UPSTREAM_TALLY"])
    before = sum(int(n) for n in tally.read_text().split()) if tally.is_file() else 0
    return before + len(httpx.get(f"{url}/replay/v1/journal").json()["calls"])


def test_record_mode_records_then_replays(project: pytest.Pytester, upstream: str,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_UPSTREAM", upstream)
    monkeypatch.setenv("TEST_UPSTREAM_TALLY", str(project.path / "upstream-tally.txt"))
    project.makepyfile(test_rec=RECORD_TESTS.format(answer=ANSWER))
    existing = (project.path / "scenarios" / "basic-chat" / "session.jsonl").read_bytes()
    result = run(project, "--dsh-replay-record=all",
                 "--dsh-replay-upstream", upstream)
    result.assert_outcomes(passed=2)
    assert _upstream_calls(upstream) == 4  # both tests went to the upstream
    assert (project.path / "scenarios" / "fresh" / "session.jsonl").is_file()
    assert list((project.path / "scenarios" / "basic-chat").glob("*.bak"))  # the old one kept
    # The recordings replay keyless, consumed, with the upstream gone from the command line.
    replayed = run(project)
    replayed.assert_outcomes(passed=2)
    assert existing  # the sample was a real scenario before it was re-recorded


def test_record_missing_records_only_what_is_missing(project: pytest.Pytester, upstream: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_UPSTREAM", upstream)
    monkeypatch.setenv("TEST_UPSTREAM_TALLY", str(project.path / "upstream-tally.txt"))
    project.makepyfile(test_rec=RECORD_TESTS.format(answer=ANSWER))
    existing = project.path / "scenarios" / "basic-chat" / "session.jsonl"
    before = existing.read_bytes()
    result = run(project, "--dsh-replay-record=missing",
                 "--dsh-replay-upstream", upstream)
    result.assert_outcomes(passed=2)
    assert _upstream_calls(upstream) == 2  # only the fresh scenario was recorded
    assert existing.read_bytes() == before
    assert not list(existing.parent.glob("*.bak"))
    assert (project.path / "scenarios" / "fresh" / "session.jsonl").is_file()
    run(project).assert_outcomes(passed=2)
