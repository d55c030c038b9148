"""docs/format.md#override-sidecar: the replay.override.json sidecar in both forms, validated completely."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay_engine import (
    ChunksEntry,
    HangEntry,
    SidecarError,
    ThrowEntry,
    load_scenario,
    load_sidecar,
    parse_sidecar_text,
    validate_entry,
    validate_sidecar,
)
from tests.unit.logtools import call_events, entries_json, header, text_chunks, write_scenario

FIN = {"type": "finish", "reason": {"kind": "stop"}}
CHUNKS = {"kind": "chunks", "chunks": [FIN]}
THROW = {"kind": "throw", "chunks": [], "message": "no", "code": "AUTH"}
HANG = {"kind": "hang"}
TWO_CALLS = call_events(1, 1, text_chunks("one")) + call_events(1, 2, text_chunks("two"))


def scenario(tmp_path: Path, sidecar: Any, primary: bool = True) -> Path:
    return write_scenario(tmp_path, (header("p"), TWO_CALLS) if primary else None, sidecar=sidecar)


# --- valid documents ----------------------------------------------------------------------


def test_bare_list_replaces_primary(tmp_path: Path) -> None:
    doc = [CHUNKS, THROW, {"kind": "hang", "readyFile": "r.marker"}]
    loaded = load_scenario(scenario(tmp_path, doc))
    primary = loaded.scripts[0]
    assert entries_json(primary.entries) == doc
    assert [e.origin for e in primary.entries] == ["replaced"] * 3
    assert loaded.sidecar_form == "list"
    assert primary.recorded_id == "p"
    assert loaded.derived_primary is None


def test_bare_list_never_parses_primary_events(tmp_path: Path) -> None:
    root = scenario(tmp_path, [HANG])
    with open(root / "session.jsonl", "a") as handle:
        handle.write("{broken json\nnull\n")
    assert [e.entry.kind for e in load_scenario(root).scripts[0].entries] == ["hang"]


def test_bare_list_without_primary_log(tmp_path: Path) -> None:
    loaded = load_scenario(scenario(tmp_path, [HANG], primary=False))
    assert loaded.scripts[0].recorded_id == ""
    assert loaded.scripts[0].file is None


def test_empty_bare_list(tmp_path: Path) -> None:
    assert load_scenario(scenario(tmp_path, [])).scripts[0].entries == []


def test_patches_replace_and_append_in_document_order(tmp_path: Path) -> None:
    doc = {"patches": [{"at": 2, "entry": CHUNKS}, {"at": 0, "entry": THROW}]}
    loaded = load_scenario(scenario(tmp_path, doc))
    entries = loaded.scripts[0].entries
    assert [(e.entry.kind, e.origin, e.call_key) for e in entries] == [
        ("throw", "patched", "1/1"), ("chunks", "derived", "1/2"), ("chunks", "appended", None)]
    assert entries_json(entries)[0] == THROW
    assert loaded.derived_primary is not None and len(loaded.derived_primary) == 2


def test_empty_patches_keeps_derived(tmp_path: Path) -> None:
    loaded = load_scenario(scenario(tmp_path, {"patches": []}))
    assert [e.origin for e in loaded.scripts[0].entries] == ["derived", "derived"]
    assert loaded.sidecar_form == "patches"


def test_at_as_float_integer(tmp_path: Path) -> None:
    loaded = load_scenario(scenario(tmp_path, {"patches": [{"at": 1.0, "entry": HANG}]}))
    assert [e.entry.kind for e in loaded.scripts[0].entries] == ["chunks", "hang"]


def test_chunks_are_lossless() -> None:
    odd = {"type": "finish", "reason": {"kind": "stop"}, "replayState": {"a": [1, 2.5, None, {"b": True}]},
           "x-extra": "kept"}
    delta = {"type": "text-delta", "index": 0, "text": "é\u2028", "providerMeta": {"id": 1}}
    sidecar = validate_sidecar([{"kind": "chunks", "chunks": [delta, odd]}], "f.json")
    entry = sidecar.entries[0]
    assert isinstance(entry, ChunksEntry)
    assert entry.chunks == [delta, odd]
    assert entries_json(sidecar.entries) == [{"kind": "chunks", "chunks": [delta, odd]}]


def test_entry_types() -> None:
    sidecar = validate_sidecar([CHUNKS, THROW, HANG, {"kind": "hang", "readyFile": "m"}], "f.json")
    assert [type(e) for e in sidecar.entries] == [ChunksEntry, ThrowEntry, HangEntry, HangEntry]
    assert entries_json(sidecar.entries)[2] == {"kind": "hang"}


def test_patch_keeps_origin_details(tmp_path: Path) -> None:
    loaded = load_scenario(scenario(tmp_path, {"patches": [{"at": 1, "entry": HANG}]}))
    patched = loaded.scripts[0].entries[1]
    assert (patched.origin, patched.call_key) == ("patched", "1/2")
    assert patched.lines == loaded.derived_primary[1].lines  # type: ignore[index]


# --- every validation error ----------------------------------------------------------------

BAD = "chunk type {!r} is not one of: block-end, block-start, finish, reasoning-delta, text-delta, " \
      "tool-call-delta, usage"

ERRORS: list[tuple[str, Any, list[str]]] = [
    ("not-list-or-object", 5, ["document: expected a list of entries or {\"patches\": [...]}, got int"]),
    ("string-doc", "x", ["document: expected a list of entries"]),
    ("null-doc", None, ["document: expected a list of entries"]),
    ("object-extra-key", {"patches": [], "x": 1}, ["document: unknown key(s) x"]),
    ("object-no-patches", {"entries": []}, ["document: unknown key(s) entries"]),
    ("empty-object", {}, ["document: missing key patches"]),
    ("patches-not-list", {"patches": 3}, ["patches: must be a list"]),
    ("entry-not-object", [5], ["entry 0: must be an object"]),
    ("no-kind", [{"chunks": []}], ["entry 0: missing kind (chunks, throw or hang)"]),
    ("bad-kind", [CHUNKS, {"kind": "sleep"}], ["entry 1: kind 'sleep' is not one of chunks, throw, hang"]),
    ("extra-key", [{"kind": "chunks", "chunks": [], "note": 1}],
     ["entry 0.note: unknown key (entries take exactly the keys of their kind)"]),
    ("hang-extra-key", [{"kind": "hang", "chunks": []}], ["entry 0.chunks: unknown key"]),
    ("chunks-missing", [{"kind": "chunks"}], ["entry 0.chunks: missing required key"]),
    ("chunks-not-list", [{"kind": "chunks", "chunks": {}}], ["entry 0.chunks: must be a list"]),
    ("chunk-not-object", [{"kind": "chunks", "chunks": [FIN, 3]}],
     ["entry 0.chunks[1]: a chunk must be a JSON object"]),
    ("chunk-bad-type", [CHUNKS, CHUNKS, {"kind": "chunks", "chunks": [FIN, FIN, FIN, {"type": "text"}]}],
     ["entry 2.chunks[3]: " + BAD.format("text")]),
    ("chunk-no-type", [{"kind": "chunks", "chunks": [{"text": "x"}]}],
     ["entry 0.chunks[0]: " + BAD.format(None)]),
    ("throw-missing-code", [{"kind": "throw", "chunks": [], "message": "m"}],
     ["entry 0.code: missing required key"]),
    ("throw-empty-message", [{"kind": "throw", "chunks": [], "message": "", "code": "X"}],
     ["entry 0.message: must be a non-empty string"]),
    ("throw-code-number", [{"kind": "throw", "chunks": [], "message": "m", "code": 5}],
     ["entry 0.code: must be a string"]),
    ("throw-missing-chunks", [{"kind": "throw", "message": "m", "code": "X"}],
     ["entry 0.chunks: missing required key"]),
    ("throw-bad-prefix", [{"kind": "throw", "chunks": [{"type": "oops"}], "message": "m", "code": "X"}],
     ["entry 0.chunks[0]: " + BAD.format("oops")]),
    ("hang-empty-ready", [{"kind": "hang", "readyFile": ""}],
     ["entry 0.readyFile: must be a non-empty string"]),
    ("hang-null-ready", [{"kind": "hang", "readyFile": None}],
     ["entry 0.readyFile: readyFile, when present, must be a non-empty string (not null)"]),
    ("hang-number-ready", [{"kind": "hang", "readyFile": 1}], ["entry 0.readyFile: must be a string"]),
    ("patch-not-object", {"patches": [3]}, ["patch 0: must be an object"]),
    ("patch-extra-key", {"patches": [{"at": 0, "entry": HANG, "why": "x"}]}, ["patch 0.why: unknown key"]),
    ("patch-missing-entry", {"patches": [{"at": 0}]}, ["patch 0.entry: missing required key"]),
    ("patch-missing-at", {"patches": [{"entry": HANG}]}, ["patch 0.at: missing required key"]),
    ("patch-negative-at", {"patches": [{"at": -1, "entry": HANG}]}, ["patch 0.at: must be an integer >= 0"]),
    ("patch-fraction-at", {"patches": [{"at": 0.5, "entry": HANG}]},
     ["patch 0.at: must be an integer, got 0.5"]),
    ("patch-bool-at", {"patches": [{"at": True, "entry": HANG}]},
     ["patch 0.at: must be an integer, got True"]),
    ("patch-string-at", {"patches": [{"at": "1", "entry": HANG}]},
     ["patch 0.at: must be an integer, got '1'"]),
    ("patch-unsafe-at", {"patches": [{"at": 2**53, "entry": HANG}]},
     [f"patch 0.at: must be an integer, got {2**53}"]),
    ("patch-entry-chunk", {"patches": [{"at": 0, "entry": HANG},
                                       {"at": 1, "entry": {"kind": "chunks", "chunks": [FIN, FIN, FIN, 7]}}]},
     ["patch 1.entry.chunks[3]: a chunk must be a JSON object"]),
    ("patch-entry-kind", {"patches": [{"at": 0, "entry": {"kind": "nope"}}]},
     ["patch 0.entry: kind 'nope' is not one of chunks, throw, hang"]),
    ("duplicate-at", {"patches": [{"at": 1, "entry": HANG}, {"at": 0, "entry": HANG},
                                  {"at": 1.0, "entry": HANG}]},
     ["patch 2.at: 1 is already patched by patch 0; each at may appear once"]),
    ("many", [{"kind": "throw", "chunks": [], "message": ""}, {"kind": "chunks", "chunks": [{"type": 1}]},
              {"kind": "hang", "extra": 1}],
     ["entry 0.message: must be a non-empty string", "entry 0.code: missing required key",
      "entry 1.chunks[0]: " + BAD.format(1), "entry 2.extra: unknown key"]),
]


@pytest.mark.parametrize(("doc", "problems"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_validation_errors(doc: Any, problems: list[str], tmp_path: Path) -> None:
    with pytest.raises(SidecarError) as caught:
        validate_sidecar(doc, "dir/replay.override.json")
    err = caught.value
    got: list[str] = err.problems  # type: ignore[attr-defined]
    assert len(got) == len(problems)
    for actual, expected in zip(got, problems, strict=True):
        assert actual.startswith(expected)
    assert err.message.startswith(
        f"dir/replay.override.json: invalid override sidecar ({len(got)} problem(s))")
    assert err.location == got[0].split(":", 1)[0]
    assert err.code == "SIDECAR_INVALID"
    # The same problems through a scenario load, with the real path in the message.
    root = scenario(tmp_path, json.dumps(doc))
    with pytest.raises(SidecarError) as loaded:
        load_scenario(root)
    assert loaded.value.problems == got  # type: ignore[attr-defined]
    assert str(root / "replay.override.json") in loaded.value.message


def test_problems_are_all_listed_together(tmp_path: Path) -> None:
    doc = {"patches": [
        {"at": 0, "entry": {"kind": "throw", "chunks": [], "message": "m"}},
        {"at": 0, "entry": HANG},
        {"at": 9, "entry": {"kind": "chunks", "chunks": [1]}},
    ]}
    expected = [
        "patch 0.entry.code: missing required key",
        "patch 1.at: 0 is already patched by patch 0; each at may appear once",
        "patch 2.at: 9 is past the end of the derived primary script, which has 2 call(s); use 0..1 "
        "to replace a call or 2 to append one",
        "patch 2.entry.chunks[0]: a chunk must be a JSON object",
    ]
    root = scenario(tmp_path, doc)
    with pytest.raises(SidecarError) as caught:
        load_sidecar(root / "replay.override.json", derived_length=2)
    assert caught.value.problems == expected  # type: ignore[attr-defined]
    with pytest.raises(SidecarError) as loaded:
        load_scenario(root)
    assert loaded.value.problems == expected  # type: ignore[attr-defined]
    with pytest.raises(SidecarError) as alone:
        load_sidecar(root / "replay.override.json")
    assert len(alone.value.problems) == 3  # type: ignore[attr-defined]


def test_a_long_problem_list_is_cut_at_fifty_and_counted(tmp_path: Path) -> None:
    bad = {"kind": "throw", "chunks": [], "message": "m"}
    root = scenario(tmp_path, {"patches": [{"at": 0, "entry": bad}] + [
        {"at": 1, "entry": bad} for _ in range(119)]})
    with pytest.raises(SidecarError) as caught:
        load_scenario(root)
    problems = caught.value.problems  # type: ignore[attr-defined]
    assert len(problems) == 120 + 118  # each patch lacks its code; at 1 repeats 118 times
    listed = [line.strip() for line in caught.value.message.splitlines()[1:-1]]
    located = caught.value.located  # type: ignore[attr-defined]
    assert listed == [f"line {p.line}, column {p.column}: {item}"  # each with its place
                      for p, item in zip(located, problems[:50], strict=False)
                      ] + ["… and 188 more problems"]
    assert caught.value.message.startswith(
        f"{root / 'replay.override.json'}: invalid override sidecar (238 problem(s)):")
    with pytest.raises(SidecarError) as one_more:
        validate_sidecar([{"kind": "hang", "x": k} for k in range(51)], "side.json")
    assert one_more.value.message.splitlines()[-2] == "  … and 1 more problem"
    with pytest.raises(SidecarError) as exactly:
        validate_sidecar([{"kind": "hang", "x": k} for k in range(50)], "side.json")
    assert "more problem" not in exactly.value.message


def test_range_recheck_is_skipped_when_the_log_is_broken(tmp_path: Path) -> None:
    root = write_scenario(tmp_path, (header("p"), ["{bad"]),
                          sidecar={"patches": [{"at": 5, "entry": {"kind": "nope"}}]})
    with pytest.raises(SidecarError) as caught:
        load_scenario(root)
    assert caught.value.problems == [  # type: ignore[attr-defined]
        "patch 0.entry: kind 'nope' is not one of chunks, throw, hang"]


@pytest.mark.parametrize(("at", "length"), [(3, 2), (10, 2)])
def test_at_past_end_states_length(tmp_path: Path, at: int, length: int) -> None:
    root = scenario(tmp_path, {"patches": [{"at": 0, "entry": HANG}, {"at": at, "entry": HANG}]})
    with pytest.raises(SidecarError) as caught:
        load_scenario(root)
    message = caught.value.message
    assert f"patch 1.at: {at} is past the end of the derived primary script, which has {length} call(s)" \
        in message
    assert str(root / "replay.override.json") in message
    assert caught.value.location == "patch 1.at"


def test_at_past_end_of_empty_script(tmp_path: Path) -> None:
    root = write_scenario(tmp_path, (header("p"), []), sidecar={"patches": [{"at": 1, "entry": HANG}]})
    with pytest.raises(SidecarError) as caught:
        load_scenario(root)
    assert "which has 0 call(s); use 0 to append one" in caught.value.message


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[", "replay.override.json:1:2: not valid JSON"),
        ('{"patches": [],}', "not valid JSON"),
        ("[NaN]", "NaN is not JSON"),
        ('[{"kind":"chunks","chunks":[{"type":"usage","usage":Infinity}]}]', "Infinity is not JSON"),
        ("", "not valid JSON"),
    ],
    ids=["truncated", "trailing-comma", "nan", "infinity", "empty"],
)
def test_sidecar_not_json(tmp_path: Path, text: str, fragment: str) -> None:
    root = scenario(tmp_path, text)
    with pytest.raises(SidecarError) as caught:
        load_scenario(root)
    assert fragment in caught.value.message
    assert str(root / "replay.override.json") in caught.value.message


def test_sidecar_not_utf8(tmp_path: Path) -> None:
    root = scenario(tmp_path, "[]")
    (root / "replay.override.json").write_bytes(b"[\xff]")
    with pytest.raises(SidecarError) as caught:
        load_scenario(root)
    assert "UTF-8" in caught.value.message


def test_parse_sidecar_text_and_validate_entry() -> None:
    sidecar = parse_sidecar_text('{"patches":[{"at":0,"entry":{"kind":"hang"}}]}', "x.json")
    assert sidecar.form == "patches"
    assert sidecar.patches[0][0] == 0
    assert isinstance(validate_entry(THROW), ThrowEntry)
    with pytest.raises(SidecarError) as caught:
        validate_entry({"kind": "chunks", "chunks": [{"type": "bad"}]}, where="patch 4.entry")
    assert caught.value.problems[0].startswith("patch 4.entry.chunks[0]: ")  # type: ignore[attr-defined]


def test_sidecar_applies_to_primary_only(tmp_path: Path) -> None:
    child = (header("c", created=5), call_events(1, 1, text_chunks("child")))
    root = write_scenario(tmp_path, (header("p"), TWO_CALLS), children=[child], sidecar=[HANG])
    scripts = load_scenario(root).scripts
    assert [e.entry.kind for e in scripts[0].entries] == ["hang"]
    assert [e.origin for e in scripts[1].entries] == ["derived"]
