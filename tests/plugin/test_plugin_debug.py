"""``--dsh-replay-debug``: each test served from a debugger on the terminal, held from its first
call; the debugger's ``--mode`` / ``--break``; pytest keeps off the terminal meanwhile.

Where no terminal is, ``standin_debugger.py`` takes the debugger's place (same arguments, the
same engine settings). The real debugger runs in the Pilot test and in tmux.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from dsh_replay_tui.app import AppOptions, ReplayApp

from tests.conftest import SAMPLES
from tests.plugin.plugintools import ANSWER, PLUGIN, XDIST, run, section

STANDIN = Path(__file__).with_name("standin_debugger.py")
anyio = pytest.mark.anyio

DEBUG_TESTS = f'''
    import signal
    import threading
    import time
    import httpx
    import openai
    import pytest
    from agent import run_agent

    @pytest.fixture
    def quit_debugger(dsh_replay):
        """Quits the debugger when the test body ends, as the user would with q."""
        return lambda: dsh_replay.debugger.process.send_signal(signal.SIGINT)

    @pytest.mark.dsh_replay("scenarios/basic-chat")
    def test_whole(dsh_replay, quit_debugger):
        try:
            assert dsh_replay.engine is None and dsh_replay.run == "default"
            assert dsh_replay.base_url.endswith("/runs/default/v1")
            assert run_agent(dsh_replay.base_url) == {ANSWER!r}
        finally:
            quit_debugger()

    @pytest.mark.dsh_replay("scenarios/basic-chat")
    def test_partial(dsh_replay, quit_debugger):
        client = openai.OpenAI(base_url=dsh_replay.base_url, api_key="k", max_retries=0)
        try:
            client.chat.completions.create(model="m", messages=[{{"role": "user", "content": "hi"}}])
        finally:
            quit_debugger()

    @pytest.mark.dsh_replay("scenarios/basic-chat", strict=True, bind="order")
    def test_held(dsh_replay, quit_debugger):
        # started held: the first call waits before its first chunk until it is stepped
        control = dsh_replay.anthropic_base_url + "/replay/v1"
        held, done = [], threading.Event()

        def user():  # steps each held call to its end, as the debugger's e key does
            while not done.is_set():
                state = httpx.get(control + "/state").json()
                for b in state["bindings"]:
                    if b["status"] == "paused":
                        held.append((b["callIndex"], b["chunksServed"]))
                        httpx.post(control + "/step", json={{"how": "call"}})
                time.sleep(0.02)

        threading.Thread(target=user, daemon=True).start()
        try:
            assert run_agent(dsh_replay.base_url) == {ANSWER!r}
        finally:
            done.set()
            quit_debugger()
        assert held == [(0, 0), (1, 0)]  # each call held before its first chunk
'''


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The stand-in debugger; returns where it writes the arguments it was given."""
    argv = tmp_path / "argv.json"
    monkeypatch.setenv("DSH_REPLAY_DEBUGGER", shlex.join([sys.executable, str(STANDIN)]))
    monkeypatch.setenv("STANDIN_ARGV", str(argv))
    return argv


def test_debug_mode_serves_each_test_from_a_debugger_process(
        project: pytest.Pytester, standin: Path) -> None:
    project.makepyfile(test_debug=DEBUG_TESTS)
    result = run(project, "--dsh-replay-debug", "--dsh-replay-debug-mode", "run",
                 "-k", "whole or partial")
    result.assert_outcomes(passed=1, failed=1)
    partial = section(result, "test_partial")
    assert "dsh-replay: the replay of scenarios/basic-chat (run default) failed:" in partial
    assert "not consumed: the anonymous session consumed 1/2 recorded call(s)" in partial
    assert ("first divergence: the anonymous session: call #0 of script 0 (turn/step 1/1) in "
            "session.jsonl: user message 1") in partial


def test_debug_mode_debugs_the_first_scenario_and_replays_the_others(
        project: pytest.Pytester, standin: Path) -> None:
    """One debugger owns the terminal: a scenario the test serves besides the marker's is
    replayed as in a plain run, never a second debugger on the same screen."""
    shutil.copytree(SAMPLES / "basic-chat", project.path / "scenarios" / "other")
    project.makepyfile(test_two=f'''
        import signal
        import pytest
        from agent import run_agent

        @pytest.mark.dsh_replay("scenarios/basic-chat")
        def test_two_scenarios(dsh_replay):
            try:
                other = dsh_replay.serve("scenarios/other")
                assert dsh_replay.debugger is not None and other.debugger is None
                assert other.engine is not None and other.run != "default"
                assert run_agent(other.base_url) == {ANSWER!r}
                assert run_agent(dsh_replay.base_url) == {ANSWER!r}
            finally:
                dsh_replay.debugger.process.send_signal(signal.SIGINT)
    ''')
    result = run(project, "--dsh-replay-debug", "--dsh-replay-debug-mode", "run")
    result.assert_outcomes(passed=1)


def test_debug_starts_held_and_passes_the_tests_settings(project: pytest.Pytester,
                                                          standin: Path) -> None:
    project.makepyfile(test_debug=DEBUG_TESTS)
    result = run(project, "--dsh-replay-debug", "--dsh-replay-break", "0:1",
                 "--dsh-replay-break", "1:0", "-k", "held")
    result.assert_outcomes(passed=1)
    argv = json.loads(standin.read_text())
    assert argv[argv.index("--mode") + 1] == "call"  # held at every call by default
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--break"] == ["0:1", "1:0"]
    assert "--strict" in argv and argv[argv.index("--bind") + 1] == "order"


def test_debug_mode_refuses_xdist(project: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    result = project.runpytest_subprocess(*PLUGIN, *XDIST, "--dsh-replay-debug", "-n", "2",
                                          timeout=60)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--dsh-replay-debug opens the debugger on this terminal*"])


def test_debug_mode_refuses_a_process_without_a_terminal(project: pytest.Pytester) -> None:
    """With no terminal (a new session has none) the debugger would wait unseen for its q:
    pytest stops at start instead, before any test hangs."""
    project.makepyfile(test_plain="def test_nothing_served():\n    pass\n")
    env = {k: v for k, v in os.environ.items() if k != "DSH_REPLAY_DEBUGGER"}
    done = subprocess.run([sys.executable, "-m", "pytest", *PLUGIN, "--dsh-replay-debug"],
                          cwd=project.path, env=env, capture_output=True, text=True,
                          timeout=60, start_new_session=True, stdin=subprocess.DEVNULL)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert ("--dsh-replay-debug opens dsh-replay-tui on this terminal, and this pytest has none"
            in done.stderr), done.stderr


def test_a_terminated_pytest_stops_its_debugger(project: pytest.Pytester, standin: Path) -> None:
    """``timeout pytest --dsh-replay-debug`` (SIGTERM) leaves no debugger behind on the
    terminal: pytest stops it on its way out."""
    pid_file = project.path / "debugger.pid"
    project.makepyfile(test_waits=f'''
        import threading
        import pytest

        @pytest.mark.dsh_replay("scenarios/basic-chat")
        def test_waits(dsh_replay):
            with open({str(pid_file)!r}, "w") as out:
                out.write(str(dsh_replay.debugger.process.pid))
            threading.Event().wait(60)
    ''')
    pytester_run = subprocess.Popen([sys.executable, "-m", "pytest", *PLUGIN, "-q",
                                     "--dsh-replay-debug"], cwd=project.path,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pid = 0
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.is_file() and pid_file.read_text()):
            assert pytester_run.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        pid = int(pid_file.read_text())
        pytester_run.terminate()
        assert pytester_run.wait(30) == -signal.SIGTERM
        deadline = time.monotonic() + 30
        while _alive(pid):
            assert time.monotonic() < deadline, "the debugger outlived its pytest"
            time.sleep(0.02)
    finally:
        if pytester_run.poll() is None:
            pytester_run.kill()
            pytester_run.wait()
        if pid and _alive(pid):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie waiting for its reaper does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_a_debugger_that_cannot_start_is_a_clear_error(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DSH_REPLAY_DEBUGGER", shlex.join([sys.executable, "-c", "exit(5)"]))
    project.makepyfile(test_debug=DEBUG_TESTS)
    result = run(project, "--dsh-replay-debug", "-k", "test_whole")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the debugger exited (status 5) before it served the scenario "
                                 "(*); its command was: *"])
    assert "It needs a terminal" not in result.stdout.str()  # it had one: the reason is its own


@pytest.mark.parametrize(("mode", "breaks", "held"), [("call", (), {0, 1}),
                                                     ("run", ((0, 1),), {1})],
                         ids=["mode-call", "break-0:1"])
@anyio
async def test_the_debugger_starts_held(mode: str, breaks: tuple[tuple[int, int], ...],
                                        held: set[int]) -> None:
    options = AppOptions(scenario=SAMPLES / "basic-chat", port=0, watch=False,
                         mode=mode, breaks=breaks)  # type: ignore[arg-type]
    app = ReplayApp(options)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.replay_ready.wait()
        assert app.engine.mode == mode and app.engine.breakpoints == frozenset(breaks)
        paused = asyncio.Event()
        app.engine.subscribe(lambda event: paused.set()
                             if type(event).__name__ == "CallPaused" else None)
        assert app.url is not None
        async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
            async def call(text: str) -> int:
                async with client.stream("POST", "/v1/chat/completions", json={
                        "model": "m", "stream": True,
                        "messages": [{"role": "user", "content": text}]}) as answer:
                    return sum([1 async for line in answer.aiter_lines() if line.startswith("data:")])

            for n in range(2):
                paused.clear()
                task = asyncio.create_task(call(f"call {n}"))
                if n in held:
                    await asyncio.wait_for(paused.wait(), 30)
                    state = app.engine.state()
                    assert [(b.call_index, b.status, b.chunks_served)
                            for b in state.bindings] == [(n, "paused", 0)]
                    assert not task.done()
                    await pilot.press("e")  # end call: release it to its end
                assert await asyncio.wait_for(task, 30) > 1
        await pilot.press("q")
    assert app.return_code == 0


# -- in a real terminal -----------------------------------------------------------------------

TMUX = shutil.which("tmux")


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[object]:
    if TMUX is None or shutil.which("dsh-replay-tui") is None:
        pytest.skip("tmux and the installed dsh-replay-tui are needed")
    from tests.app.test_e2e_tmux import Terminal

    term = Terminal(f"dsh-replay-plugin-{uuid.uuid4().hex[:12]}", tmp_path / "tmux.conf")
    try:
        yield term
    finally:
        import subprocess

        subprocess.run([TMUX, "-L", term.socket, "kill-server"], capture_output=True, timeout=10,
                       check=False)


def test_debug_holds_the_first_call_in_a_real_terminal(project: pytest.Pytester,
                                                       terminal: object) -> None:
    from tests.app.test_e2e_tmux import Terminal

    assert isinstance(terminal, Terminal)
    received = project.path / "received.txt"
    project.makepyfile(test_held=f'''
        import openai
        import pytest
        from agent import QUESTION

        @pytest.mark.dsh_replay("scenarios/basic-chat", consumed=False)
        def test_first_call(dsh_replay):
            client = openai.OpenAI(base_url=dsh_replay.base_url, max_retries=0)
            stream = client.chat.completions.create(
                model="m", stream=True, messages=[{{"role": "user", "content": QUESTION}}])
            for chunk in stream:  # the wire's opening role chunk carries nothing recorded
                delta = chunk.choices[0].delta if chunk.choices else None
                recorded = delta is not None and (
                    delta.content or delta.tool_calls or getattr(delta, "reasoning_content", None))
                if recorded:
                    with open({str(received)!r}, "a") as note:
                        note.write("chunk\\n")
    ''')
    command = shlex.join([sys.executable, "-m", "pytest", *PLUGIN, "-p", "no:randomly",
                          "--dsh-replay-debug", "test_held.py"])
    terminal.start(project.path, "sh", "-c", f"{command}; echo pytest-exit-$?", size=(160, 45))
    screen = terminal.wait_for("the first call held before its first chunk",
                               lambda s: "PAUSED 1" in s and "paused #0 0ch" in s)
    assert not received.exists()  # no recorded chunk reached the test before a key was pressed
    header = screen.splitlines()[0]  # the debugger's header, state first: pytest wrote nothing over it
    assert header.startswith(" PAUSED 1 ") and "bound 1/1" in header
    terminal.tmux("send-keys", "-t", "e2e", "e")  # end call: the test gets its chunks
    terminal.wait_for("the chunks reaching the test", lambda s: received.exists())
    terminal.tmux("send-keys", "-t", "e2e", "q")
    done = terminal.wait_for("pytest to end", lambda s: "pytest-exit-" in s, history=True,
                             exited=True)
    assert "pytest-exit-0" in done, done
    lines = [line for line in done.splitlines() if line.strip()]
    verdict = lines.index("replay NOT consumed (run default):")
    # the debugger's verdict on lines of its own, between pytest's progress lines
    assert lines[verdict - 1].rstrip() == "test_held.py", done
    assert lines[verdict + 1] == "  - the anonymous session consumed 1/2 recorded call(s)"
    assert lines[verdict + 2].startswith("test_held.py ."), done


HANG_TEST = '''
    import threading
    import time
    import httpx
    import openai
    import pytest

    @pytest.mark.dsh_replay("scenarios/hang")
    def test_waits_for_the_ready_file(dsh_replay, tmp_path):
        client = openai.OpenAI(base_url=dsh_replay.base_url, api_key="k", max_retries=0)
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}])
        errors = []

        def hang():
            try:
                client.chat.completions.create(model="m", messages=[{"role": "user", "content": "b"}])
            except openai.APIError as exc:
                errors.append(exc)

        waiter = threading.Thread(target=hang)
        waiter.start()
        assert dsh_replay.ready_dir.parent == tmp_path  # the test's own, as in a plain replay
        marker = dsh_replay.ready_dir / "hang-ready.marker"
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert time.monotonic() < deadline, "the hang never made its marker"
            time.sleep(0.01)
        httpx.post(dsh_replay.anthropic_base_url + "/replay/v1/cancel", json={})
        waiter.join(30)
        assert errors and not waiter.is_alive()
        with open("body-done.txt", "w") as note:
            note.write("done")
'''


def test_a_hangs_ready_file_is_in_the_tests_ready_dir_under_the_debugger(
        project: pytest.Pytester, standin: Path) -> None:
    shutil.copytree(SAMPLES / "hang-ready-file", project.path / "scenarios" / "hang")
    project.makepyfile(test_hang=HANG_TEST.replace(
        "        with open(\"body-done.txt\", \"w\") as note:\n"
        "            note.write(\"done\")\n",
        "        import os, signal\n"
        "        dsh_replay.debugger.process.send_signal(signal.SIGINT)\n"))
    result = run(project, "--dsh-replay-debug", "--dsh-replay-debug-mode", "run")
    result.assert_outcomes(passed=1)
    argv = json.loads(standin.read_text())
    assert Path(argv[argv.index("--ready-dir") + 1]).name == "dsh-replay-ready"


def test_a_debugger_quit_before_the_scenario_loaded_fails_as_a_replay_would(
        project: pytest.Pytester, standin: Path) -> None:
    (project.path / "scenarios" / "basic-chat" / "replay.override.json").write_text("{oops")
    project.makepyfile(test_debug=DEBUG_TESTS)
    plain = run(project, "-k", "test_whole")
    debugged = run(project, "--dsh-replay-debug", "-k", "test_whole")
    plain.assert_outcomes(errors=1)
    debugged.assert_outcomes(errors=1)
    reason = [line for line in plain.outlines if "cannot serve" in line]
    assert reason and "[SIDECAR" in reason[0], plain.outlines
    assert [line for line in debugged.outlines if "cannot serve" in line] == reason
    assert "Traceback" not in debugged.stdout.str() and "SidecarError" not in debugged.stdout.str()


def test_the_debugger_holds_the_test_until_its_scenario_loads_in_a_real_terminal(
        project: pytest.Pytester, terminal: object) -> None:
    """A sidecar that does not load: the test waits (none of its calls refused) while the user
    fixes it; then it runs, and its hang's marker is in the test's own ready directory."""
    from tests.app.test_e2e_tmux import Terminal

    assert isinstance(terminal, Terminal)
    scenario = project.path / "scenarios" / "hang"
    shutil.copytree(SAMPLES / "hang-ready-file", scenario)
    sidecar = scenario / "replay.override.json"
    good = sidecar.read_bytes()
    sidecar.write_text("{oops")
    project.makepyfile(test_hang=HANG_TEST)
    command = shlex.join([sys.executable, "-m", "pytest", *PLUGIN, "-p", "no:randomly",
                          "--dsh-replay-debug", "--dsh-replay-debug-mode", "run", "test_hang.py"])
    terminal.start(project.path, "sh", "-c", f"{command}; echo pytest-exit-$?", size=(80, 24))
    terminal.wait_for("the load error", lambda s: "Cannot load the scenario" in s)
    sidecar.write_bytes(good)  # as the user would fix it (o, E, or another editor)
    terminal.wait_for("the test's body to end", lambda s: (project.path / "body-done.txt").exists())
    terminal.tmux("send-keys", "-t", "e2e", "q")
    done = terminal.wait_for("pytest to end", lambda s: "pytest-exit-" in s, history=True,
                             exited=True)
    assert "pytest-exit-0" in done and "1 passed" in done, done
