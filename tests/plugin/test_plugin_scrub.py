"""Scrubbing recordings: the ``dsh_replay_config`` fixture's hooks and text rules, and
``dsh-replay record --scrub FILE``. Scrubbed values become stable tokens, and a scrubbed
recording still replays to consumed with no divergence under strict.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import openai
import pytest

from tests.plugin.plugintools import (
    KEY,
    ThreadedUpstream,
    files_of,
    run,
    section,
    wait_until,
)
from tests.record.fakeupstream import Answer, text_answer

EMAIL = "alice@example.com"
TOKEN = "sk-abcdefghijkl12345"
PROMPT = f"I am Alice, write to {EMAIL}"


def secret_answer(body: bytes) -> Answer:
    """An answer that repeats the email across two deltas and carries a token."""
    return text_answer("Secretly: I will write to alice@exa", f"mple.com with {TOKEN}.")


CONFIG = r'''
import pytest

def no_names(body):
    for message in body["messages"]:
        message["content"] = message["content"].replace("Alice", "PERSON")

def openly(chunk):
    # a text comes twice: in its deltas and whole in its block's end
    if chunk["type"] == "text-delta":
        return {**chunk, "text": chunk["text"].replace("Secretly", "Openly")}
    if chunk["type"] == "block-end" and chunk["block"]["type"] == "text":
        chunk["block"]["text"] = chunk["block"]["text"].replace("Secretly", "Openly")
    return chunk

@pytest.fixture
def dsh_replay_config():
    return {"filter_text": [{"pattern": r"[\w.]+@[\w.]+\w", "name": "email"},
                            r"sk-[A-Za-z0-9]{10,}"],
            "before_record_request": no_names, "before_record_chunk": openly}
'''

TESTS = f'''
    import pytest
    from agent import ask

    @pytest.mark.dsh_replay("scenarios/private")
    def test_private(dsh_replay):
        answer = ask(dsh_replay.base_url, {PROMPT!r})
        assert answer.endswith(".")
'''


@pytest.fixture
def upstream() -> ThreadedUpstream:
    fake = ThreadedUpstream({"secret": secret_answer})
    yield fake  # type: ignore[misc]
    fake.close()


def test_scrubbed_recordings_replay_strictly(project: pytest.Pytester, upstream: ThreadedUpstream,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    project.makeconftest(CONFIG)
    project.makepyfile(test_private=TESTS)
    run(project, "--dsh-replay-record=once", "--dsh-replay-upstream", upstream.url("secret")) \
        .assert_outcomes(passed=1)
    log = (project.path / "scenarios" / "private" / "session.jsonl").read_text()
    for secret in (EMAIL, "Alice", TOKEN, "Secretly", KEY):
        assert secret not in log, secret
    emails = set(re.findall(r"\{\{scrubbed:email-[0-9a-f]{8}\}\}", log))
    assert len(emails) == 1  # the same address is the same token, in the prompt and the answer
    email = emails.pop()
    events = [json.loads(line) for line in log.splitlines()[1:]]
    assert [e["data"]["content"] for e in events if e["type"] == "user/message"] == [
        f"I am PERSON, write to {email}"]
    deltas = [e["data"]["chunk"]["text"] for e in events if e["type"] == "assistant/chunk"
              and e["data"]["chunk"]["type"] == "text-delta"]
    # a match split across two deltas: the token where it starts, the rest removed
    assert deltas == [f"Openly: I will write to {email}", " with {{scrubbed:text-"
                      + deltas[1].split("{{scrubbed:text-")[1]]
    assert re.fullmatch(r" with \{\{scrubbed:text-[0-9a-f]{8}\}\}\.", deltas[1])
    # The live request still has the real name and address: the plugin scrubs it the same
    # way before comparing, so the strict replay is consumed with no divergence.
    result = run(project, "--dsh-replay-strict")
    result.assert_outcomes(passed=1)
    assert "divergence" not in result.stdout.str()
    # Without the hooks, the {{…}} tokens still match any text, but the renamed person does not.
    (project.path / "conftest.py").unlink()
    strict = run(project, "--dsh-replay-strict")
    strict.assert_outcomes(failed=1)
    assert (f"user message 1: recorded 'I am PERSON, write to {email}', live 'I am Alice, "
            f"write to {EMAIL}'") in section(strict, "test_private")


def test_a_broken_config_fails_the_test_naming_it(project: pytest.Pytester) -> None:
    project.makeconftest('''
        import pytest

        @pytest.fixture
        def dsh_replay_config():
            return {"filter_text": ["(unclosed"], "before_recording": None}
    ''')
    project.makepyfile(test_private=TESTS)
    result = run(project)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*dsh-replay: [[]SCRUB[]] the dsh_replay_config fixture: unknown "
                                 "key(s) before_recording; it takes before_record_request, "
                                 "before_record_chunk, filter_text*"])


def test_a_hook_failing_on_a_replayed_request_is_reported_even_when_swallowed(
        project: pytest.Pytester) -> None:
    """The agent catches the 500 its call got: the replay's account still names the hook."""
    project.makepyfile(test_swallows='''
        import openai
        import pytest

        @pytest.fixture
        def dsh_replay_config():
            def before_record_request(body):
                return body["no such key"]
            return {"before_record_request": before_record_request}

        @pytest.mark.dsh_replay("scenarios/basic-chat", consumed=False)
        def test_swallows(dsh_replay):
            client = openai.OpenAI(base_url=dsh_replay.base_url, max_retries=0)
            try:
                client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hi"}])
            except openai.InternalServerError:
                pass
    ''')
    result = run(project)
    result.assert_outcomes(failed=1)
    swallowed = section(result, "test_swallows")
    assert ("  a live request could not be scrubbed, so its call was answered 500: [SCRUB] the "
            "dsh_replay_config fixture: before_record_request raised KeyError: 'no such key'"
            ) in swallowed.splitlines(), swallowed


SCRUB_FILES = {
    "rules.json": json.dumps({"filter_text": [{"pattern": r"[\w.]+@[\w.]+\w", "name": "email"}]}),
    "rules.toml": '[[filter_text]]\npattern = \'[\\w.]+@[\\w.]+\\w\'\nname = "email"\n',
    "rules.py": 'filter_text = [{"pattern": r"[\\w.]+@[\\w.]+\\w", "name": "email"}]\n'
                'def before_record_chunk(chunk):\n'
                '    if chunk["type"] == "text-delta":\n'
                '        chunk["text"] = chunk["text"].replace("Secretly", "Openly")\n',
}


@pytest.mark.parametrize("name", sorted(SCRUB_FILES))
def test_record_scrubs_with_a_rules_file(tmp_path: Path, upstream: ThreadedUpstream,
                                         name: str) -> None:
    rules = tmp_path / name
    rules.write_text(SCRUB_FILES[name])
    target, url_file = tmp_path / "scenario", tmp_path / "url"
    proc = subprocess.Popen([sys.executable, "-m", "replay_engine.cli", "record", str(target),
                             "--upstream", upstream.url("secret"), "--port", "0", "--url-file",
                             str(url_file), "--scrub", str(rules)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until("the recorder's URL file", url_file.is_file)
        client = openai.OpenAI(base_url=url_file.read_text().strip() + "/v1", api_key=KEY,
                               max_retries=0)
        with client.chat.completions.stream(model="m", messages=[
                {"role": "user", "content": PROMPT}]) as stream:
            stream.get_final_completion()
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    log = (target / "session.jsonl").read_text()
    assert EMAIL not in log and len(set(re.findall(r"\{\{scrubbed:email-[0-9a-f]{8}\}\}", log))) == 1
    assert ("Openly" in log) == (name == "rules.py")  # hooks come only from a Python file


def test_record_refuses_a_scrub_file_it_cannot_use(tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"before_record_chunk": "x"}))
    done = subprocess.run([sys.executable, "-m", "replay_engine.cli", "record",
                           str(tmp_path / "s"), "--upstream", "http://127.0.0.1:9", "--port", "0",
                           "--scrub", str(rules)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert (f"{rules}: before_record_chunk can only be defined in a .py scrub file"
            in done.stderr)
    assert not (tmp_path / "s").exists()
    assert files_of(tmp_path) == {"rules.json": rules.read_bytes()}
