"""Seeded fuzz of the wire: arbitrary bodies, headers and paths on every dialect route and
every control route of a real ``dsh-replay serve``. Bad input may be refused in any 4xx way,
but never answered 500, and the server keeps serving."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import SAMPLES

MODEL_ROUTES = ["/v1/chat/completions", "/v1/messages", "/v1/responses", "/replay/v1/stream",
                "/v1beta/models/replay:streamGenerateContent", "/v1/models/replay:generateContent"]
CONTROL_POSTS = ["/replay/v1/cancel", "/replay/v1/step", "/replay/v1/pause", "/replay/v1/mode",
                 "/replay/v1/reset", "/replay/v1/assert-consumed", "/replay/v1/reload"]
CONTROL_GETS = ["/replay/v1/state", "/replay/v1/journal", "/replay/v1/scripts", "/healthz",
                "/v1/models", "/v1/models/replay"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("fuzz")
    scenario = root / "basic-chat"
    shutil.copytree(SAMPLES / "basic-chat", scenario)
    proc = subprocess.Popen([sys.executable, "-m", "replay_engine.cli", "serve", str(scenario),
                             "--port", "0", "--ready-dir", str(root / "ready")],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
        assert proc.poll() is None, "the server died under the fuzz"
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=12,
)
messages = st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "x", 1]),
                                           "content": json_values}), max_size=3)
plausible = st.fixed_dictionaries({}, optional={
    "model": st.text(max_size=10) | json_values,
    "messages": messages | json_values,
    "input": json_values,
    "stream": st.booleans() | json_values,
    "sessionId": st.text(max_size=12) | json_values,
    "mode": st.sampled_from(["run", "call", "chunk", "x"]) | json_values,
    "how": st.sampled_from(["chunk", "call", "continue", ""]) | json_values,
    "max_tokens": json_values,
    "tools": json_values,
    "system": json_values,
})


def _encode(value: Any) -> bytes:
    return json.dumps(value).encode()


valid_chat = st.fixed_dictionaries({
    "model": st.just("replay"),
    "messages": st.just([{"role": "user", "content": "hi"}]),
    "stream": st.booleans(),
}, optional={"sessionId": st.sampled_from(["s1", "s2"]), "max_tokens": json_values,
             "tools": json_values, "stream_options": json_values, "n": json_values})

bodies = st.one_of(
    valid_chat.map(_encode),
    valid_chat.map(_encode),
    plausible.map(_encode),
    json_values.map(_encode),
    st.binary(max_size=64),
    st.text(max_size=40).map(str.encode),
    plausible.map(lambda v: _encode(v)[: max(len(_encode(v)) // 2, 1)]),  # cut short
)
ids = st.one_of(st.sampled_from(["r1", "r2", "a.b-c_d", "x" * 128]),
                st.text(st.characters(codec="utf-8"), min_size=0, max_size=12))
prefixes = st.one_of(
    st.just(""),
    ids.map(lambda r: f"/runs/{quote(r, safe='')}"),
    st.tuples(ids, ids).map(lambda p: f"/runs/{quote(p[0], safe='')}/sessions/{quote(p[1], safe='')}"),
    ids.map(lambda s: f"/sessions/{quote(s, safe='')}"),
)
header_sets = st.fixed_dictionaries({}, optional={
    "content-type": st.sampled_from(["application/json", "application/json; charset=utf-8",
                                     "text/plain", "application/x-www-form-urlencoded", ""]),
    # printable ASCII without the outer spaces HTTP clients refuse to send in a header value
    "x-session-id": st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7e),
                            max_size=12).map(str.strip),
    "x-stainless-retry-count": st.sampled_from(["0", "1", "-1", "x", "99999999999999999999"]),
    "origin": st.sampled_from(["http://127.0.0.1", "https://evil.example", "null", "x"]),
    "accept": st.sampled_from(["text/event-stream", "*/*", "application/json"]),
})
requests = st.one_of(
    st.tuples(st.just("POST"), prefixes, st.sampled_from(MODEL_ROUTES + CONTROL_POSTS), bodies,
              header_sets),
    st.tuples(st.sampled_from(["GET", "DELETE", "PUT"]), prefixes,
              st.sampled_from(CONTROL_GETS + MODEL_ROUTES + [""]), st.just(b""), header_sets),
)


def test_bad_input_never_answers_500(server: str) -> None:
    """Every fuzzed request gets a JSON answer below 500; and the fuzz reached the routes (it is
    no fuzz if everything was refused at the door)."""
    statuses: dict[int, int] = {}

    @settings(max_examples=300, derandomize=True, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(request=requests)
    def probe(request: tuple[str, str, str, bytes, dict[str, str]]) -> None:
        method, prefix, route, body, headers = request
        with httpx.Client(timeout=30) as client:
            answer = client.request(method, server + prefix + route, content=body, headers=headers)
            status = answer.status_code
            assert status < 500, (method, prefix + route, body[:200], headers, answer.text[:500])
            if status >= 400:
                assert answer.headers.get("content-type", "").startswith("application/json")
                answer.json()
            statuses[status] = statuses.get(status, 0) + 1
            if method == "POST" and route in MODEL_ROUTES and status == 200:
                client.post(server + "/replay/v1/reset")  # keep the default run serving calls
            assert client.get(server + "/healthz").status_code == 200

    probe()
    assert statuses.get(200, 0) >= 20, statuses
    assert sum(n for s, n in statuses.items() if s in (400, 409, 413, 422)) >= 20, statuses
