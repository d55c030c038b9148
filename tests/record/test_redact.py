"""The redactor over pieces of one text: a secret split anywhere comes out as one marker, and
the pieces joined read as the whole text redacted."""

from __future__ import annotations

import itertools

from replay_engine.record.redact import REDACTED, Redactor

KEY = "sk-abcdef0123456789"
OTHER = "tok_9876543210zyxw"


def _redactor() -> Redactor:
    redactor = Redactor()
    redactor.learn([("Authorization", f"Bearer {KEY}"), ("x-goog-api-key", OTHER),
                    ("x-request-id", "not-a-secret-value")], "key=short&api_key=AIzaQ_0123456789")
    return redactor


def test_every_split_of_a_text_holding_secrets_redacts_them_whole() -> None:
    redactor = _redactor()
    text = f"a{KEY}b{OTHER}{KEY}c AIzaQ_0123456789 not-a-secret-value"
    whole = redactor(text)
    assert whole == f"a{REDACTED}b{REDACTED}{REDACTED}c {REDACTED} not-a-secret-value"
    for cut_a, cut_b in itertools.combinations(range(len(text) + 1), 2):
        pieces = [text[:cut_a], text[cut_a:cut_b], text[cut_b:]]
        out = redactor.pieces(pieces)
        assert len(out) == 3 and "".join(out) == whole, pieces
        assert all(KEY[:6] not in p and OTHER[:6] not in p for p in out)


def test_short_values_and_texts_without_secrets_are_left_alone() -> None:
    redactor = _redactor()
    pieces = ["short", " and ", "key=short"]
    assert redactor.pieces(pieces) is pieces
    chunks = [{"type": "text-delta", "index": 0, "text": KEY[:5]},
              {"type": "text-delta", "index": 1, "text": KEY[5:]}]  # two blocks: no one secret
    assert redactor.chunks(chunks) == chunks
