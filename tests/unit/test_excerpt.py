"""The journal's excerpt of a request's messages stays bounded whatever their shape (one huge
string, many items, many keys), keeps the newest items, and a cut text still matches the
whole one by its digest."""

from __future__ import annotations

import json
from typing import Any

import pytest

from replay_engine.context import ContextItem
from replay_engine.engine.binding import kept_live
from replay_engine.excerpt import EXCERPT_BUDGET, EXCERPT_TEXT, excerpt, texts_match


@pytest.mark.parametrize("messages", [
    [{"role": "user", "content": "x" * 5_000_000}],
    [{"role": "user", "content": f"m{n}"} for n in range(200_000)],
    {"contents": [{"parts": [{"text": "t"}], **{f"k{n}": n for n in range(100_000)}}]},
    [[[[["deep " * 10_000]]]]] * 50,
])
def test_any_shape_is_kept_within_the_budget(messages: Any) -> None:
    kept = excerpt(messages)
    assert kept.cut and kept.size > EXCERPT_BUDGET
    assert len(json.dumps(kept.value, ensure_ascii=False)) < 3 * EXCERPT_BUDGET


def test_the_newest_items_are_kept_and_small_messages_are_whole() -> None:
    messages = [{"role": "user", "content": f"old {n} " + "o" * 1000} for n in range(500)]
    messages.append({"role": "user", "content": "the new one"})
    kept = excerpt(messages).value
    assert kept[-1] == {"role": "user", "content": "the new one"}
    assert isinstance(kept[0], str) and kept[0].startswith("…[cut: ")
    small = [{"role": "user", "content": "hi"}]
    assert excerpt(small).value is small and not excerpt(small).cut


def test_a_cut_text_matches_the_whole_by_digest_and_nothing_else() -> None:
    text = "word " * 5000
    cut = excerpt([text]).value[0]
    assert len(cut) < EXCERPT_TEXT + 100 and "more characters; sha256" in cut
    assert texts_match(cut, text)
    assert texts_match(cut, "  ".join(text.split()) + " ") is False  # another text: digest differs
    assert not texts_match(cut, text + "!")
    assert texts_match("a  b", "a b")  # uncut texts compare with whitespace collapsed


def test_messages_that_are_not_json_are_digested_not_refused() -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "Opaque()"

    kept = excerpt([Opaque()])
    assert kept.size == len(repr([Opaque()]))
    assert excerpt(("a", "b")).value == ("a", "b")


def test_a_binding_keeps_a_long_request_text_by_digest() -> None:
    short, long = ContextItem("user", "hi"), ContextItem("tool", "t" * 10 * EXCERPT_TEXT, "c1")
    assert kept_live((short,)) == (short,)
    kept = kept_live((short, long))
    assert kept[0] is short and kept[1].call_id == "c1" and len(kept[1].text) < 100
    assert kept_live((short, long)) == kept  # the same text, the same digest: a retry
    assert kept_live((short, ContextItem("tool", "u" * 10 * EXCERPT_TEXT, "c1"))) != kept
