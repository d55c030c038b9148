"""``GET /v1/models`` (and ``/v1/models/{model}``) through the recorder: the upstream's answer
relayed decoded, with its own length, and nothing recorded.

The answer is read with limits: at most ``MAX_PASSTHROUGH_BYTES`` decoded (inflated a bounded
step at a time), within ``PASSTHROUGH_TIMEOUT_S`` in all, and only while the client waits (a
client that leaves closes the upstream connection). Past a limit the client gets the
recorder's JSON 502 naming it.
"""

from __future__ import annotations

import anyio
import httpx
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from .decoding import MIB, BodyPrefix
from .dialect import INVALID_RESPONSE, StreamFailure
from .forward import NOT_RELAYED, UNREACHABLE_STATUS, describe, drop_quietly, relayed_head, upstream_error
from .redact import Redactor, shown_url

MAX_PASSTHROUGH_BYTES = 16 * MIB
"""The most of a model list (decompressed) the recorder reads and relays."""
PASSTHROUGH_TIMEOUT_S = 30.0
"""The most time a model list may take, from the request to its last byte."""


class Passthrough:
    """The ASGI answer of one ``GET`` of the model list, read with the limits above."""

    def __init__(self, client: httpx.AsyncClient, upstream: str, redact: Redactor,
                 outgoing: httpx.Request) -> None:
        self.client = client
        self.upstream = upstream
        self.redact = redact
        self.outgoing = outgoing
        self.stops: set[anyio.CancelScope] = set()
        """Where it registers the scope a stopping recorder cancels (the proxy's own set)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        answer: Response | None = None
        with anyio.CancelScope() as stopping:
            self.stops.add(stopping)
            try:
                answer = await self._answer(receive)
            finally:
                self.stops.discard(stopping)
        if answer is not None:
            await answer(scope, receive, send)
        elif stopping.cancelled_caught:
            drop_quietly()  # the recording stopped: the client's connection drops

    async def _answer(self, receive: Receive) -> Response | None:
        """The answer to send, or None when the client left first."""
        answer: Response | None = None
        async with anyio.create_task_group() as group:
            async def watch() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                group.cancel_scope.cancel()  # the client left: nothing more to fetch

            async def fetch() -> None:
                nonlocal answer
                answer = await self._fetch()
                group.cancel_scope.cancel()

            group.start_soon(watch)
            group.start_soon(fetch)
        return answer

    def _failed(self, message: str, code: str) -> Response:
        return upstream_error(self.redact(message), UNREACHABLE_STATUS, code)

    async def _fetch(self) -> Response:
        where = shown_url(self.upstream)
        with anyio.move_on_after(PASSTHROUGH_TIMEOUT_S):
            try:
                response = await self.client.send(self.outgoing, stream=True)
            except httpx.HTTPError as exc:
                return self._failed(f"the upstream {where} did not answer ({describe(exc)})",
                                    "UPSTREAM_UNREACHABLE")
            try:
                headers = relayed_head(response, skip=NOT_RELAYED | {"content-encoding"})
                body = BodyPrefix(response.headers.get("content-encoding", ""),
                                  MAX_PASSTHROUGH_BYTES)
                async for raw in response.aiter_raw():
                    await body.take(raw)
                    if body.over:
                        raise StreamFailure(f"the upstream's model list is larger than "
                                            f"{MAX_PASSTHROUGH_BYTES // MIB} MiB",
                                            code=INVALID_RESPONSE)
                if body.failure is not None:
                    raise body.failure
            except StreamFailure as exc:
                return self._failed(exc.message, exc.code or INVALID_RESPONSE)
            except httpx.HTTPError as exc:
                return self._failed(f"the upstream connection broke mid-answer "
                                    f"({describe(exc)})", "UPSTREAM_UNREACHABLE")
            finally:
                with anyio.CancelScope(shield=True):
                    await response.aclose()
            relayed = Response(bytes(body.decoded), status_code=response.status_code)
            relayed.raw_headers = [*headers, (b"content-length",
                                              str(len(body.decoded)).encode("ascii"))]
            return relayed
        return self._failed(f"the upstream {where} did not send its model list within "
                            f"{PASSTHROUGH_TIMEOUT_S:g} s", "UPSTREAM_TIMEOUT")
