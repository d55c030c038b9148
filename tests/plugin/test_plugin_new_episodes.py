"""``--dsh-replay-record=new_episodes``: replay what is recorded, record what is past it.

Calls past the end of a session's script and the calls of a session past the last one go to
the provider through the recorder and are appended to the scenario as whole calls, once the
test passed and every new call succeeded; the scenario then replays with them.
"""

from __future__ import annotations

import json

import pytest

from tests.plugin.plugintools import (
    KEY,
    RECORDED,
    ThreadedUpstream,
    bare_scenario,
    files_of,
    run,
    section,
    text_entry,
)

EPISODES = f'''
    import pytest
    from agent import ask, run_agent

    @pytest.mark.dsh_replay("scenarios/basic-chat")
    def test_goes_on(dsh_replay):
        # the two recorded calls, then one more in the same session, then a new session
        assert run_agent(dsh_replay.base_url, follow_up="And now?") == {RECORDED!r}
        assert ask(dsh_replay.base_url, "Summarise src/", session="summariser") == {RECORDED!r}
'''


@pytest.fixture(autouse=True)
def real_key(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The new calls go upstream with the key the environment has."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def test_new_calls_are_appended_and_replay_afterwards(
        project: pytest.Pytester, fake_upstream: ThreadedUpstream) -> None:
    project.makepyfile(test_more=EPISODES)
    scenario = project.path / "scenarios" / "basic-chat"
    original = (scenario / "session.jsonl").read_bytes()
    result = run(project, "--dsh-replay-record=new_episodes", "--dsh-replay-upstream",
                 fake_upstream.url())
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*dsh-replay: appended 2 new call(s) to scenarios/basic-chat "
                                 "(session.1.jsonl, session.jsonl)*"])
    assert len(fake_upstream.requests) == 2  # the recorded calls were replayed, not forwarded
    assert f"Bearer {KEY}" in fake_upstream.requests[1][0]  # the real key, not a placeholder
    grown = (scenario / "session.jsonl").read_bytes()
    assert grown.startswith(original) and (scenario / "session.jsonl.bak.1").read_bytes() == original
    appended = [json.loads(line) for line in grown[len(original):].splitlines() if line.strip()]
    assert [e["type"] for e in appended][:3] == ["turn/start", "step/start", "user/message"]
    assert appended[0]["seq"] == 20  # the log's seq goes on where it ended
    assert appended[2]["data"] == {"turn": 2, "step": 1, "role": "user", "content": "And now?"}
    child = (scenario / "session.1.jsonl").read_text().splitlines()
    assert json.loads(child[0])["id"] == "summariser"
    for name, data in files_of(scenario).items():
        assert KEY.encode() not in data, name
    assert not list(scenario.parent.glob("*.recording-*"))
    # Replayed, keyless, with the new calls: consumed, nothing forwarded.
    run(project, "--dsh-replay-strict").assert_outcomes(passed=1)
    assert len(fake_upstream.requests) == 2


def test_nothing_new_leaves_nothing_behind(project: pytest.Pytester,
                                           fake_upstream: ThreadedUpstream) -> None:
    project.makepyfile(test_same='''
        import pytest
        from agent import run_agent

        @pytest.mark.dsh_replay("scenarios/basic-chat")
        def test_as_recorded(dsh_replay):
            assert run_agent(dsh_replay.base_url).endswith("Hello!")
    ''')
    before = files_of(project.path / "scenarios")
    run(project, "--dsh-replay-record=new_episodes", "--dsh-replay-upstream",
        fake_upstream.url()).assert_outcomes(passed=1)
    assert files_of(project.path / "scenarios") == before
    assert fake_upstream.requests == []


def test_a_failed_new_call_leaves_the_scenario(project: pytest.Pytester,
                                               fake_upstream: ThreadedUpstream) -> None:
    project.makepyfile(test_more='''
        import openai
        import pytest
        from agent import run_agent

        @pytest.mark.dsh_replay("scenarios/basic-chat")
        def test_goes_on(dsh_replay):
            with pytest.raises(openai.RateLimitError):
                run_agent(dsh_replay.base_url, follow_up="And now?")
    ''')
    scenario = project.path / "scenarios" / "basic-chat"
    before = files_of(scenario)
    result = run(project, "--dsh-replay-record=new_episodes", "--dsh-replay-upstream",
                 fake_upstream.url("rate"))
    result.assert_outcomes(failed=1)
    text = section(result, "test_goes_on")
    assert ("dsh-replay: the new calls recorded for scenarios/basic-chat failed, so the scenario "
            "is unchanged:") in text
    assert ("session.jsonl call #2 (turn/step 2/1, the anonymous session) failed upstream: "
            "RATE_LIMIT: Rate limit reached for requests") in text
    assert "the failed attempt is kept in scenarios/basic-chat.recording-1" in text
    assert files_of(scenario) == before
    attempt = project.path / "scenarios" / "basic-chat.recording-1"
    assert b'"content":"And now?"' in (attempt / "session.jsonl").read_bytes()


def test_a_sidecar_that_decides_the_primary_is_extended(
        project: pytest.Pytester, fake_upstream: ThreadedUpstream) -> None:
    scenario = bare_scenario(project.path / "scenarios" / "decided", [text_entry("First.")])
    project.makepyfile(test_decided=f'''
        import pytest
        from agent import ask

        @pytest.mark.dsh_replay("scenarios/decided")
        def test_twice(dsh_replay):
            assert ask(dsh_replay.base_url, "one") == "First."
            assert ask(dsh_replay.base_url, "two") == {RECORDED!r}
    ''')
    run(project, "--dsh-replay-record=new_episodes", "--dsh-replay-upstream",
        fake_upstream.url()).assert_outcomes(passed=1)
    decided = json.loads((scenario / "replay.override.json").read_text())
    assert [e["kind"] for e in decided] == ["chunks", "chunks"]
    assert decided[1]["chunks"][1] == {"type": "text-delta", "index": 0, "text": "Recorded "}
    assert (scenario / "replay.override.json.bak.1").is_file()
    run(project).assert_outcomes(passed=1)
