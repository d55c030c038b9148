"""``--dsh-replay-record=from_divergence``: a test whose agent changed replays the recorded
prefix, records the rest of each diverged session, and passes; the scenario is repaired only
when the test passed and every upstream call succeeded."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from tests.plugin.plugintools import XDIST, ThreadedUpstream, files_of, run
from tests.record.repairtools import echo_answer, record_plan

ECHO_AGENT = '''
"""A two-session agent on the openai SDK: each session asks its questions in turn."""
import openai


def converse(base_url, plan):
    client = openai.OpenAI(base_url=base_url, max_retries=0)
    answers = {}
    for session, questions in plan.items():
        messages = []
        for question in questions:
            messages.append({"role": "user", "content": question})
            stream = client.chat.completions.create(
                model="m", messages=messages, stream=True,
                extra_headers={"X-Session-Id": session})
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
            answers.setdefault(session, []).append(text)
            messages.append({"role": "assistant", "content": text})
    return answers
'''

PLAN = {"main": ["a1", "a2", "a3"], "helper": ["b1", "b2"]}


def _test(plan: dict[str, list[str]], name: str = "fixture", *, then: str = "") -> str:
    expected = {s: [f"re: {q}" for q in qs] for s, qs in plan.items()}
    return f'''
import pytest
from echo_agent import converse

@pytest.mark.dsh_replay("scenarios/{name}")
def test_{name}(dsh_replay):
    assert converse(dsh_replay.base_url, {plan!r}) == {expected!r}
    {then}
'''


@pytest.fixture
def echo() -> Iterator[ThreadedUpstream]:
    """The loopback provider that echoes each question (and counts the calls)."""
    upstream = ThreadedUpstream({"ok": lambda body: echo_answer("", body)})
    try:
        yield upstream
    finally:
        upstream.close()


@pytest.fixture
def recorded(project: pytest.Pytester, echo: ThreadedUpstream,
             monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """The project with ``scenarios/fixture`` recorded from the echo provider (5 calls)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-repair")
    project.makepyfile(echo_agent=ECHO_AGENT, test_fixture=_test(PLAN))
    run(project, "--dsh-replay-record=once", "--dsh-replay-upstream",
        echo.url()).assert_outcomes(passed=1)
    assert len(echo.requests) == 5
    return project


def test_a_diverged_test_passes_and_its_tail_is_recorded(recorded: pytest.Pytester,
                                                        echo: ThreadedUpstream) -> None:
    scenario = recorded.path / "scenarios" / "fixture"
    before = files_of(scenario)
    changed = {"main": ["a1", "a2 reworded", "a3"], "helper": ["b1", "b2"]}
    recorded.makepyfile(test_fixture=_test(changed))
    run(recorded, "--dsh-replay-strict").assert_outcomes(failed=1)  # as it is: diverged
    result = run(recorded, "--dsh-replay-record=from_divergence", "--dsh-replay-upstream",
                 echo.url())
    result.assert_outcomes(passed=1)
    assert len(echo.requests) == 5 + 2  # main's calls #1 and #2, nothing of the helper
    result.stdout.fnmatch_lines(["*dsh-replay: recorded 2 call(s) of scenarios/fixture from the "
                                 "divergence (script 0 from call #1); the previous files are "
                                 "kept as session.jsonl.bak.1*"])
    after = files_of(scenario)
    assert after["session.1.jsonl"] == before["session.1.jsonl"]
    assert after["session.jsonl.bak.1"] == before["session.jsonl"]
    assert not list(scenario.parent.glob("*.recording-*"))
    run(recorded, "--dsh-replay-strict").assert_outcomes(passed=1)  # repaired, keyless
    assert len(echo.requests) == 7


def test_a_test_that_fails_leaves_the_scenario_as_it_was(recorded: pytest.Pytester,
                                                        echo: ThreadedUpstream) -> None:
    scenario = recorded.path / "scenarios" / "fixture"
    before = files_of(scenario)
    recorded.makepyfile(test_fixture=_test({"main": ["a1", "other"], "helper": ["b1", "b2"]},
                                           then="assert False, 'the agent got it wrong'"))
    result = run(recorded, "--dsh-replay-record=from_divergence", "--dsh-replay-upstream",
                 echo.url())
    result.assert_outcomes(failed=1)
    assert len(echo.requests) == 6
    result.stdout.fnmatch_lines(["*the recording from the divergence of scenarios/fixture "
                                 "failed, so the scenario is unchanged:*", "*the test failed*"])
    assert files_of(scenario) == before
    assert len(list(scenario.parent.glob("fixture.recording-*"))) == 1


def test_a_diverged_replay_names_the_repair(recorded: pytest.Pytester) -> None:
    recorded.makepyfile(test_fixture=_test({"main": ["a1", "other"], "helper": ["b1", "b2"]}))
    result = run(recorded, "--dsh-replay-strict")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*first divergence: session main: call #1 *",
        "*repair it from there: rerun with --dsh-replay-record=from_divergence "
        "--dsh-replay-upstream URL*dsh-replay record scenarios/fixture --upstream URL "
        "--from-divergence*"])


def test_xdist_workers_repair_their_own_scenarios(project: pytest.Pytester,
                                                  echo: ThreadedUpstream,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-repair")
    project.makepyfile(echo_agent=ECHO_AGENT, test_one=_test(PLAN, "one"),
                       test_two=_test(PLAN, "two"))
    run(project, "--dsh-replay-record=once", "--dsh-replay-upstream",
        echo.url()).assert_outcomes(passed=2)
    assert len(echo.requests) == 10
    project.makepyfile(test_one=_test({"main": ["a1", "a2", "a3"], "helper": ["b1", "b2 x"]},
                                      "one"),
                       test_two=_test({"main": ["a1 x", "a2", "a3"], "helper": ["b1", "b2"]},
                                      "two"))
    result = run(project, *XDIST, "-n", "2", "--dsh-replay-record=from_divergence",
                 "--dsh-replay-upstream", echo.url())
    result.assert_outcomes(passed=2)
    assert len(echo.requests) == 10 + 1 + 3
    run(project, "--dsh-replay-strict").assert_outcomes(passed=2)
    heads = [json.loads((project.path / "scenarios" / n / "session.1.jsonl").read_text()
                        .splitlines()[0])["id"] for n in ("one", "two")]
    assert heads == ["helper", "helper"]


def test_a_v4_scenario_with_a_child_is_repaired_as_v4(project: pytest.Pytester,
                                                     echo: ThreadedUpstream,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-repair")
    scenario = project.path / "scenarios" / "fixture"
    asyncio.run(record_plan(scenario, echo.url(), PLAN, "v4"))
    before = files_of(scenario)
    changed = {"main": ["a1", "a2", "a3"], "helper": ["b1 reworded", "b2"]}
    project.makepyfile(echo_agent=ECHO_AGENT, test_fixture=_test(changed))
    result = run(project, "--dsh-replay-record=from_divergence", "--dsh-replay-upstream",
                 echo.url())
    result.assert_outcomes(passed=1)
    assert len(echo.requests) == 5 + 2  # the helper from its first call on
    after = files_of(scenario)
    assert after["session.v4.jsonl"] == before["session.v4.jsonl"]
    header = before["session.1.v4.jsonl"].splitlines(keepends=True)[0]
    assert after["session.1.v4.jsonl"].startswith(header)
    assert json.loads(header)["version"] == 4
    assert not any(name.endswith(".jsonl") and ".v4." not in name for name in after)
    run(project, "--dsh-replay-strict").assert_outcomes(passed=1)
    assert len(echo.requests) == 7
