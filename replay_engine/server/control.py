"""The control routes, the provider catalog and the served responses: everything a harness, the
debugger or an agent asks the server that is not a model call (docs/format.md#wire-control,
#provider-catalog, #wire-openai-chat and #wire-responses)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import anyio
from starlette.requests import Request
from starlette.responses import Response

from ..engine import diff_scripts
from ..errors import ReplayError
from ..models import SessionScript
from ..safe_text import shown
from ..scenario.loading import Scenario
from ..wire.dialect import openai_error_body
from ..wire.jsonbytes import JSONResponse
from .request_body import BadRequest, read_json_body, session_field
from .served import Served

Endpoint = Callable[[Request], Any]


def with_call_keys(script: SessionScript) -> dict[str, Any]:
    """A script as ``GET /replay/v1/scripts`` answers it: each entry with its origin and, for a
    call taken from the log, its recorded ``callKey`` (turn/step), as the debugger shows it."""
    out = script.to_json(with_origin=True)
    for item, entry in zip(script.entries, out["entries"], strict=True):
        if item.call_key is not None:
            entry["callKey"] = item.call_key
    return out


def scripts_headers(served: list[SessionScript], scenario: Scenario | None) -> dict[str, Any]:
    """Each served log's header by file name, as ``GET /replay/v1/scripts`` answers it.

    The scenario's own headers when it holds exactly the scripts being served; otherwise
    (the engine was reloaded behind the server's back) the served scripts' headers.
    """
    if scenario is not None and len(scenario.scripts) == len(served) and all(
            a is b for a, b in zip(scenario.scripts, served, strict=True)):
        return {name: h.to_json() for name, h in scenario.headers.items()}
    return {Path(s.file).name: s.header.to_json() for s in served if s.file is not None}


def _no_call(request: Request) -> JSONResponse:
    return JSONResponse({"ok": False, "error": "no call in flight for that session"},
                        status_code=404)


def _model(model_id: str, owner: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": 0, "owned_by": owner}


class Catalog:
    """``GET /v1/models`` and ``GET /v1/models/{id}``: the configured provider catalog; without
    one, ``replay`` and every model the server's model calls named, and any id answered (agents
    check their model at start) without being listed (a cross-site ``<img>`` can send a GET)."""

    def __init__(self, served: Served) -> None:
        self.served = served

    def _model_list(self) -> list[dict[str, Any]]:
        listed = [_model(m.id, p.id) for p in self.served.providers for m in p.models]
        if not self.served.catalog:
            seen = {m["id"] for m in listed}
            listed += [_model(name, "replay") for name in self.served.named_models
                       if name not in seen]
        return listed

    async def models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": self._model_list()})

    async def model(self, request: Request) -> Response:
        wanted = str(request.path_params["model"])
        for model in self._model_list():
            if model["id"] == wanted:
                return JSONResponse(model)
        if not self.served.catalog:  # answered, not listed: a GET changes nothing
            return JSONResponse(_model(wanted, "replay"))
        known = ", ".join(m["id"] for m in self._model_list())
        return JSONResponse(
            openai_error_body(f"model {shown(wanted)} is not in the catalog; it offers: {known}",
                              "MODEL_NOT_FOUND"), status_code=404, headers=self.served.no_retry)

    async def response(self, request: Request) -> Response:
        """``GET /v1/responses/{id}``: a response this run served, as it stands now."""
        run = self.served.run(request)
        wanted = str(request.path_params["response"])
        found = self.served.answers.get(run, wanted)
        if found is not None:
            return JSONResponse(found)
        return JSONResponse(openai_error_body(
            f"no response {shown(wanted)} was served in run {shown(run)}; GET /v1/responses/<id> "
            f"answers the responses the run served (its newest {self.served.engine.journal_limit})"
            " until it is reset", "RESPONSE_NOT_FOUND", refused=True),
            status_code=404, headers=self.served.no_retry)

    def table(self) -> list[tuple[str, Endpoint, list[str]]]:
        """(path, endpoint, methods) of the catalog and served-response routes."""
        return [("/v1/models", self.models, ["GET"]),
                ("/v1/models/{model:path}", self.model, ["GET"]),
                ("/v1/responses/{response}", self.response, ["GET"])]


class Control:
    """The ``/replay/v1/…`` control endpoints and ``/healthz``."""

    def __init__(self, served: Served) -> None:
        self.served = served
        self.engine = served.engine
        self._reloading = anyio.Lock()

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def scripts(self, request: Request) -> Response:
        served = self.engine.scripts
        return JSONResponse({
            "ok": True,
            "scripts": [with_call_keys(s) for s in served],
            "headers": scripts_headers(served, self.served.scenario),
        })

    async def context(self, request: Request) -> Response:
        """``GET /replay/v1/context/{script}/{call}``: the recorded user messages and tool
        results before that call, which a faithful agent sends back (null for sidecar entries)."""
        indices: dict[str, int] = {}
        for what in ("script", "call"):
            text = str(request.path_params[what])
            if not text.isdecimal() or not text.isascii():
                kind = "negative" if text.startswith("-") else "not an integer"
                return JSONResponse({"ok": False, "code": "INVALID_INDEX", "index": what,
                                     "error": f"{what} index {shown(text)} is {kind}: script "
                                     "and call indices count from 0, as GET /replay/v1/scripts "
                                     "lists them"}, status_code=400)
            indices[what] = int(text)
        script, call = indices["script"], indices["call"]
        if script >= len(self.engine.scripts):
            return JSONResponse({"ok": False, "code": "NOT_FOUND", "index": "script",
                                 "error": f"script index {script} is past the "
                                 f"{len(self.engine.scripts)} script(s) served; GET "
                                 "/replay/v1/scripts lists them"}, status_code=404)
        found = self.engine.recorded_context(script, call)
        items = None if found is None else [
            {"role": i.role, "text": i.text, "toolCallId": i.call_id} for i in found]
        return JSONResponse({"ok": True, "script": script, "call": call, "context": items})

    async def state(self, request: Request) -> Response:
        return JSONResponse(self.engine.state(self.served.run(request)).to_json())

    async def journal(self, request: Request) -> Response:
        run = self.served.run(request)
        return JSONResponse({"run": run, "calls": [r.to_json() for r in self.engine.journal(run)]})

    async def assert_consumed(self, request: Request) -> Response:
        run = self.served.run(request)
        problems = self.engine.verdict_problems(run)
        diverged = self.engine.first_divergence(run)
        if problems:
            return JSONResponse({"ok": False, "problems": problems, "firstDivergence": diverged,
                                 "unconsumed": self.engine.consumed_problems(run),
                                 "strict": self.engine.strict}, status_code=409)
        return JSONResponse({"ok": True, "firstDivergence": diverged,
                             "strict": self.engine.strict})

    async def reset(self, request: Request) -> Response:
        self.engine.reset(self.served.run(request))
        return JSONResponse({"ok": True})

    async def delete_run(self, request: Request) -> Response:
        """``DELETE /runs/{run}``: drop the run's bindings, cursors and journal altogether."""
        run = self.served.run(request)
        if not self.engine.forget(run):
            return JSONResponse({"ok": False, "error": f"no run {shown(run)}"}, status_code=404)
        return JSONResponse({"ok": True})

    async def cancel(self, request: Request) -> Response:
        try:
            body = await read_json_body(request)
            session = session_field(body)
        except BadRequest as bad:
            return bad.response()
        run = self.served.run(request)
        if "sessionId" in body:
            count = self.engine.cancel(session, run=run)
        else:
            count = self.engine.cancel(run=run, all_hanging=True)
        return JSONResponse({"ok": True, "cancelled": count})

    async def step(self, request: Request) -> Response:
        try:
            body = await read_json_body(request)
            session = session_field(body)
            how = body.get("how", "chunk")
            if how not in ("chunk", "call", "continue"):
                raise BadRequest(400, f"how must be chunk, call or continue, got {shown(how)}",
                                 "INVALID_REQUEST")
        except BadRequest as bad:
            return bad.response()
        step_how: Literal["chunk", "call", "continue"] = how
        if not self.engine.step(session, run=self.served.run(request), how=step_how):
            return _no_call(request)
        return JSONResponse({"ok": True})

    async def pause(self, request: Request) -> Response:
        try:
            session = session_field(await read_json_body(request))
        except BadRequest as bad:
            return bad.response()
        if not self.engine.pause(session, run=self.served.run(request)):
            return _no_call(request)
        return JSONResponse({"ok": True})

    async def mode(self, request: Request) -> Response:
        try:
            body = await read_json_body(request)
            mode = body.get("mode")
            if mode not in ("run", "call", "chunk"):
                raise BadRequest(400, f"mode must be run, call or chunk, got {shown(mode)}",
                                 "INVALID_REQUEST")
        except BadRequest as bad:
            return bad.response()
        step_mode: Literal["run", "call", "chunk"] = mode
        self.engine.set_mode(step_mode, run=self.served.run(request))
        return JSONResponse({"ok": True, "mode": step_mode})

    async def reload(self, request: Request) -> Response:
        reload_fn = self.served.reload_fn
        if reload_fn is None:
            return JSONResponse({"ok": False, "error": "this server has no reload source"},
                                status_code=404)
        async with self._reloading:  # one at a time: each one's changes are its own
            before = self.engine.scripts
            try:
                result = reload_fn()
                if inspect.isawaitable(result):  # it loads off the loop (reload_scenario)
                    result = await result
            except ReplayError as exc:
                return JSONResponse({"ok": False, "error": exc.message, "code": exc.code},
                                    status_code=409)
            self.served.reloaded(result)
            self.engine.prepare()  # nothing left to scan after a staged reload
            changes = await anyio.to_thread.run_sync(diff_scripts, before, self.engine.scripts)
        return JSONResponse({"ok": True, "changes": changes})

    def table(self) -> list[tuple[str, Endpoint, list[str]]]:
        """(path, endpoint, methods) of the control routes."""
        return [
            ("/replay/v1/scripts", self.scripts, ["GET"]),
            ("/replay/v1/state", self.state, ["GET"]),
            ("/replay/v1/context/{script}/{call}", self.context, ["GET"]),
            ("/replay/v1/journal", self.journal, ["GET"]),
            ("/replay/v1/assert-consumed", self.assert_consumed, ["POST"]),
            ("/replay/v1/reset", self.reset, ["POST"]),
            ("/replay/v1/cancel", self.cancel, ["POST"]),
            ("/replay/v1/step", self.step, ["POST"]),
            ("/replay/v1/pause", self.pause, ["POST"]),
            ("/replay/v1/mode", self.mode, ["POST"]),
            ("/replay/v1/reload", self.reload, ["POST"]),
            ("/healthz", self.healthz, ["GET"]),
        ]
