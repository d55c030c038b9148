"""The upstream's answer body as the recorder reads it: its content encoding undone a bounded
piece at a time, and the limits every read of an answer keeps.

A gzip body of 1 MiB can expand to gigabytes. :class:`Decoder` never inflates more than
``DECODE_STEP`` bytes in one go and :class:`BodyPrefix` stops inflating once it holds its
limit, so the caps on answers, events and error bodies apply to the decompressed bytes, and the
event loop gets a turn between steps (``pieces`` is iterated with a checkpoint after each).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import anyio.lowlevel

from ..errors import AnswerTooLarge
from .dialect import INVALID_RESPONSE, StreamFailure

MIB = 1024 * 1024
MAX_ERROR_BODY = MIB
"""Bytes of an error answer read for its message, decompressed (all of it is relayed)."""
MAX_ANSWER_BYTES = 64 * MIB
"""The most of one answer (streamed or not, decompressed or as sent) the recorder reads or
relays: past it the relay ends and the call is recorded ``INVALID_RESPONSE``."""
MAX_STREAM_CHUNKS = 100_000
"""The most chunks one streamed answer is rebuilt into (about 100 000 tokens): past it the
relay ends and the call is recorded ``INVALID_RESPONSE``, so an endless stream of small
events cannot hold the recorder's memory."""
MAX_EVENT_BYTES = 16 * MIB
"""A streamed event still unterminated at this size ends the rebuild (INVALID_RESPONSE)."""
DECODE_STEP = 64 * 1024
"""The most bytes one decompression step produces before the loop gets a turn."""


def too_large(what: str, limit: int) -> AnswerTooLarge:
    """The failure of an answer (or event) past ``limit`` bytes."""
    return AnswerTooLarge(f"the upstream's {what} is larger than {limit // MIB} MiB",
                          code=INVALID_RESPONSE)


class Decoder:
    """Undoes an answer's content encoding for the recorder (the client gets the bytes as
    sent); a corrupt or unknown encoding is a StreamFailure, never a crash."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding.strip().lower() or "identity"
        self._z = zlib.decompressobj(wbits=47) if self.encoding in ("gzip", "deflate") else None

    def pieces(self, raw: bytes) -> Iterator[bytes]:
        """The decoded bytes of ``raw``, at most ``DECODE_STEP`` at a time (a caller that stops
        iterating inflates nothing more)."""
        if self._z is None:
            if self.encoding != "identity":
                raise StreamFailure(f"the upstream's answer is {self.encoding}-encoded, which "
                                    "the recorder cannot read", code=INVALID_RESPONSE)
            if raw:
                yield raw
            return
        data = raw
        while True:
            try:
                out = self._z.decompress(data, DECODE_STEP)
            except zlib.error as exc:
                raise StreamFailure(f"the upstream's {self.encoding} body is corrupt ({exc})",
                                    code=INVALID_RESPONSE) from None
            data = self._z.unconsumed_tail
            if out:
                yield out
            if not data and len(out) < DECODE_STEP:
                return


class BodyPrefix:
    """The first ``limit`` bytes of a body, as sent and decoded, read as its pieces arrive;
    ``over`` once the decoded body went past the limit (nothing more is inflated then)."""

    def __init__(self, encoding: str, limit: int) -> None:
        self.limit = limit
        self.decoder = Decoder(encoding)
        self.raw = bytearray()
        self.decoded = bytearray()
        self.over = False
        self.failure: StreamFailure | None = None
        """Why the body cannot be decoded (corrupt, an unknown encoding), if so."""

    async def take(self, raw: bytes) -> None:
        """Read one piece of the body as it came."""
        if len(self.raw) < self.limit:
            self.raw += raw[:self.limit - len(self.raw)]
        if self.over or self.failure is not None:
            return
        try:
            for piece in self.decoder.pieces(raw):
                room = self.limit - len(self.decoded)
                self.decoded += piece[:room]
                if len(piece) > room:
                    self.over = True
                    return
                await anyio.lowlevel.checkpoint()
        except StreamFailure as exc:
            self.failure = exc
