"""The pytest plugin, run by pytest on generated test files whose agents use the openai SDK."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import SAMPLES
from tests.plugin.plugintools import ANSWER, XDIST, run, section


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
        "*record it first: pytest --dsh-replay-record=once --dsh-replay-upstream URL "
        "test_partial.py::test_needs_a_recording (or dsh-replay record "
        "scenarios/not-recorded-yet --upstream URL)",
    ])
    early = section(result, "test_stops_early")
    assert "not consumed: the anonymous session consumed 1/2 recorded call(s)" in early
    assert ("first divergence: the anonymous session: call #0 of script 0 (turn/step 1/1) in "
            "session.jsonl: user message 1: recorded 'What files are in the workspace? "
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


def test_the_printed_commands_work_from_where_pytest_was_started(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Started in a subdirectory of the rootdir, the failure's commands name the test file and
    the scenario from there (the node id's file is relative to the rootdir instead)."""
    tests = project.mkdir("tests")
    (tests / "test_sub.py").write_text(
        "import pytest\n\n\n"
        "@pytest.mark.dsh_replay('../scenarios/basic-chat')\n"
        "def test_never_calls():\n    pass\n")
    monkeypatch.chdir(tests)
    result = run(project, "test_sub.py")
    result.assert_outcomes(failed=1)
    never = section(result, "test_never_calls")
    assert ("step through this test in it:      pytest --dsh-replay-debug "
            "test_sub.py::test_never_calls") in never.splitlines(), never
    assert f"dsh-replay-tui {project.path / 'scenarios' / 'basic-chat'}" in never, never


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
    assert "counting from 0 as the debugger does: call #2, past calls #0 to #1]" in extra
    # calls are numbered from 0, as the engine and the debugger number them
    assert ("call: the anonymous session: call #2 of script 0 (session.jsonl): past the "
            "recording; its last recorded call is #1 (turn/step 1/2)") in extra
    assert ("diff: user message 1: the live request has 'And now?', which the recording does "
            "not have here") in extra
    assert ("first divergence: the anonymous session: call #1 of script 0 (turn/step 1/2) in "
            "session.jsonl: tool result call_ls_1: recorded 'README.md src', "
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
    assert ("call: the first call of session helper; the recorded sessions (session.jsonl) "
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
