"""One way to make a served scenario: every option of the serve option set reaches the engine
and the server in every front end (``serve_scenario``, ``dsh-replay serve``, the debugger and
the pytest plugin's servers and debugger flags), so none can drop one again."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import sys
from pathlib import Path

import httpx
import pytest
from dsh_replay_tui.__main__ import build_parser as tui_parser
from dsh_replay_tui.__main__ import options_from_args
from dsh_replay_tui.app import ReplayApp
from dsh_replay_tui.headless.state import AppOptions

from replay_engine import ProviderConfig, ServeOptions, WireOptions, serve_fields
from replay_engine.cli.dispatch import build_parser as cli_parser
from replay_engine.engine import Pace
from replay_engine.server import ReplayServer, serve_scenario
from replay_engine.server.app import served_by
from replay_engine.server.options import serve_flags, serve_options
from replay_engine.testing.servers import ServerPool, debugger_flags
from tests.conftest import SAMPLES

BASIC = SAMPLES / "basic-chat"
PROVIDERS = [ProviderConfig.model_validate({"id": "acme", "models": [{"id": "acme-1"}]})]


def every_option(tmp_path: Path) -> ServeOptions:
    """Serve options with every field away from its default."""
    return ServeOptions(
        host="localhost", port=0, allow_hosts=("agent.example",), pace=Pace("recorded", 3, 2.5),
        providers=PROVIDERS, ready_dir=tmp_path / "ready", url_file=tmp_path / "url.txt",
        journal_limit=1, sdk_retries=True, strict=True, bind="order",
        wire=WireOptions(chat_error_finish="reason", responses_reasoning="content"))


def test_the_sample_options_leave_no_field_at_its_default(tmp_path: Path) -> None:
    options, default = every_option(tmp_path), ServeOptions()
    same = [f.name for f in dataclasses.fields(ServeOptions)
            if getattr(options, f.name) == getattr(default, f.name)]
    assert same == []  # a new option must be added to every_option (and so to these checks)


def served_options(server: ReplayServer, url_file: Path | None) -> ServeOptions:
    """The options a started server and its engine actually run with."""
    engine = server.engine
    assert server._routes is not None
    served = served_by(server._routes)
    guard = server.app
    allowed = tuple(sorted(guard.allowed - {server.host}))
    return ServeOptions(
        host=server.host, port=0, allow_hosts=allowed, pace=engine.pace,
        providers=served.providers if served.catalog else None, ready_dir=engine.ready_dir,
        url_file=url_file, journal_limit=engine.journal_limit, sdk_retries=not served.no_retry,
        strict=engine.strict, bind=engine.bind, wire=served.wire)


@pytest.mark.anyio
async def test_serve_scenario_honours_every_option(tmp_path: Path) -> None:
    wanted = dataclasses.replace(every_option(tmp_path), url_file=None)
    async with serve_scenario(BASIC, wanted) as server:
        assert served_options(server, None) == wanted
        assert server.port != 0
    fields = serve_fields(wanted)
    async with serve_scenario(BASIC, **fields) as server:
        assert served_options(server, None) == wanted


@pytest.mark.anyio
async def test_serve_scenario_keeps_strict_and_the_journal_limit(tmp_path: Path) -> None:
    async with serve_scenario(BASIC, strict=True, journal_limit=1, pace_ms=0) as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        for _ in range(2):
            answer = await http.post("/v1/chat/completions", json={
                "model": "replay", "messages": [{"role": "user", "content": "hi"}]})
            assert answer.status_code == 200
        state = (await http.get("/replay/v1/state")).json()
        verdict = await http.post("/replay/v1/assert-consumed")
    assert state["journalDropped"] == 1
    assert verdict.json()["strict"] is True
    with pytest.raises(TypeError):
        async with serve_scenario(BASIC, no_such_option=1):
            pass


@pytest.mark.anyio
async def test_the_debugger_serves_with_every_option(tmp_path: Path) -> None:
    wanted = every_option(tmp_path)
    app = ReplayApp(AppOptions(**serve_fields(wanted), scenario=BASIC, watch=False))
    async with app.run_test(size=(120, 30)) as pilot:
        await app.ready.wait()
        assert app.server is not None
        assert served_options(app.server, app.options.url_file) == wanted
        assert (tmp_path / "url.txt").read_text(encoding="utf-8").strip() == app.url
        await pilot.press("q")


def write_config(tmp_path: Path) -> Path:
    config = tmp_path / "replay.json"
    config.write_text(json.dumps({"providers": [p.model_dump(exclude_none=True)
                                                for p in PROVIDERS]}), encoding="utf-8")
    return config


def test_serve_flags_parse_back_to_the_same_options_in_both_command_lines(
        tmp_path: Path) -> None:
    wanted = every_option(tmp_path)
    flags = [*serve_flags(dataclasses.replace(wanted, providers=None)),
             "--config", str(write_config(tmp_path))]
    serve = cli_parser("serve")
    assert serve_options(serve.parse_args(["serve", str(BASIC), *flags])) == wanted
    args = tui_parser().parse_args([str(BASIC), *flags])
    args.scenario_path = BASIC
    debugger = options_from_args(args)
    assert ServeOptions(**serve_fields(debugger)) == wanted
    assert serve_flags(ServeOptions()) == []
    with pytest.raises(ValueError, match="--config"):
        serve_flags(wanted)


def test_the_plugins_debugger_gets_the_tests_serve_options() -> None:
    flags = debugger_flags("call", [(0, 1)], ServeOptions(strict=True, bind="order"))
    assert flags[:4] == ["--mode", "call", "--break", "0:1"]
    args = tui_parser().parse_args([str(BASIC), *flags])
    args.scenario_path = BASIC
    options = options_from_args(args)
    assert (options.mode, options.breaks, options.strict, options.bind) == \
           ("call", ((0, 1),), True, "order")


def test_the_plugins_servers_bind_as_the_test_asks(tmp_path: Path) -> None:
    pool = ServerPool()
    try:
        for bind in ("content", "order"):
            server = pool.server(BASIC, bind)  # type: ignore[arg-type]
            observed = pool.loop.call(lambda s=server: served_options(s, None))
            assert observed.bind == bind and observed.port == 0 and not observed.strict
    finally:
        pool.close()


@pytest.mark.anyio
async def test_dsh_replay_serve_runs_with_every_option(tmp_path: Path) -> None:
    wanted = every_option(tmp_path)
    flags = [*serve_flags(dataclasses.replace(wanted, providers=None, host="127.0.0.1")),
             "--config", str(write_config(tmp_path))]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "replay_engine.cli", "serve", str(BASIC), *flags,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        assert proc.stdout is not None
        url = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode().strip()
        assert (tmp_path / "url.txt").read_text(encoding="utf-8").strip() == url
        async with httpx.AsyncClient(base_url=url) as http:
            for _ in range(2):
                answer = await http.post("/v1/chat/completions", json={
                    "model": "acme-1", "messages": [{"role": "user", "content": "hi"}]})
                assert answer.status_code == 200
            state = (await http.get("/replay/v1/state")).json()
            models = (await http.get("/v1/models")).json()
            verdict = (await http.post("/replay/v1/assert-consumed")).json()
            other = await http.get("/replay/v1/state", headers={"Host": "agent.example"})
    finally:
        if proc.returncode is None:
            os.kill(proc.pid, signal.SIGTERM)
        await asyncio.wait_for(proc.communicate(), 60)
    assert state["pace"] == wanted.pace.describe()
    assert state["journalDropped"] == 1  # --journal-limit 1
    assert [b["boundBy"] for b in state["bindings"]] == ["order"]
    assert verdict["strict"] is True
    assert [m["id"] for m in models["data"]] == ["acme-1"]
    assert other.status_code == 200  # --allow-host


def test_only_the_option_set_builds_engines_and_servers() -> None:
    """No front end assembles an engine or a server by hand (where options get dropped)."""
    import ast

    root = Path(__file__).resolve().parents[2]
    built: list[str] = []
    for path in [*(root / "replay_engine").rglob("*.py"), *(root / "app").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in ("ReplayEngine", "ReplayServer"):
                built.append(f"{path.relative_to(root)}: {node.func.id}")
    assert built == ["replay_engine/server/options.py: ReplayEngine"]
