"""Scrubbing what a recording writes: the user's own hooks and text rules, after which the
client's secrets are still redacted (``redact.py``).

- ``before_record_request(body)``: called with a copy of each request's JSON body before its
  new user messages and tool results are taken for the log; returns the body to record (None:
  the one it was given, changed in place). The upstream still gets the real request.
- ``before_record_chunk(chunk)``: called with a copy of each rebuilt chunk before it is
  written; returns the chunk to record (None: the one it was given, changed in place).
- ``filter_text``: regular expressions; every match in a recorded text (message contents,
  chunk texts and tool arguments, a block's text joined across its deltas, failure messages)
  becomes the stable token ``{{scrubbed:NAME-HASH}}`` (HASH: 8 hex digits of the value's
  SHA-256, so the same value always gets the same token) or the rule's fixed ``replace``.

Ids, names, types and roles are never touched, so a scrubbed scenario still loads and binds.
A replay still matches: the harness's ``{{…}}`` tokens match any live text in the divergence
check, and the pytest plugin applies the same scrub to each live request before comparing
(``Scrubber.live``). Rules come from the plugin's ``dsh_replay_config`` fixture or from
``dsh-replay record --scrub FILE`` (``load_scrub_file``).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import runpy
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import regex

from ..errors import SCRUB, ConfigError
from .dialect import Chunk, RequestMessage
from .redact import DELTA_FIELDS, map_deltas, replace_spans

SCRUB_KEYS = ("before_record_request", "before_record_chunk", "filter_text")
"""What a scrub configuration may hold (the fixture's dict, a ``--scrub`` file's names)."""
STRUCTURAL_KEYS = frozenset({"type", "blockType", "id", "callId", "toolCallId", "tool_call_id",
                             "tool_use_id", "call_id", "name", "kind", "role", "signature",
                             "code", "index"})
"""Keys whose string values say what a thing is, not what it says: never scrubbed."""
TOKEN_RE = re.compile(r"\{\{scrubbed:[^{}]*\}\}")
"""A token an earlier rule (or an earlier recording) left: later rules do not cut into it."""
_NAME_RE = re.compile(r"[A-Za-z0-9_.-]+")

Hook = Callable[[dict[str, Any]], "dict[str, Any] | None"]


SCRUB_TIMEOUT_S = 1.0
"""The most time one ``filter_text`` rule may take on one text: a rule that runs longer (nested
repetition backtracking without end) stops the recording with a SCRUB error naming it."""
_FLAGS = ("IGNORECASE", "MULTILINE", "DOTALL", "VERBOSE", "ASCII")


def compile_rule(pattern: str | re.Pattern[str] | regex.Pattern[str]) -> regex.Pattern[str]:
    """A rule's pattern for the ``regex`` engine, which runs it with a time budget (a
    compiled ``re`` pattern keeps its flags); regex.error when it is not one."""
    if isinstance(pattern, regex.Pattern):
        return pattern
    if isinstance(pattern, re.Pattern):
        flags = 0
        for name in _FLAGS:
            if pattern.flags & getattr(re, name):
                flags |= getattr(regex, name)
        return regex.compile(pattern.pattern, flags)
    return regex.compile(pattern)


@dataclass(frozen=True, slots=True)
class TextRule:
    """One ``filter_text`` rule: a pattern, the name its tokens carry, or a fixed replacement."""

    pattern: regex.Pattern[str] | re.Pattern[str]
    name: str = "text"
    replace: str | None = None
    where: str = "a filter_text rule"
    """The rule as errors name it (its file and index)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "pattern", compile_rule(self.pattern))

    def token(self, value: str) -> str:
        """What a match of ``value`` becomes: the same value always gets the same token."""
        if self.replace is not None:
            return self.replace
        digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        return "{{scrubbed:" + f"{self.name}-{digest}" + "}}"

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """The matches in ``text`` as ``(start, end, token)``, none inside an existing token;
        ConfigError SCRUB when the rule runs past ``SCRUB_TIMEOUT_S`` on it."""
        kept = [(m.start(), m.end()) for m in TOKEN_RE.finditer(text)]
        out: list[tuple[int, int, str]] = []
        compiled = compile_rule(self.pattern)
        try:
            for match in compiled.finditer(text, timeout=SCRUB_TIMEOUT_S):
                start, end = match.span()
                if start == end or any(a < end and start < b for a, b in kept):
                    continue
                out.append((start, end, self.token(match.group(0))))
        except TimeoutError:
            raise ConfigError(f"{self.where}: the pattern {compiled.pattern!r} ran longer than "
                              f"{SCRUB_TIMEOUT_S:g} s on one text of {len(text)} characters; "
                              "simplify it (nested repetition such as (x+x+)+ backtracks "
                              "without end)", code=SCRUB) from None
        return out

    def apply(self, text: str) -> str:
        """``text`` with every match replaced."""
        return replace_spans([text], self.spans(text))[0]


def _rule(item: Any, where: str) -> TextRule:
    """One rule from a pattern string, a compiled pattern or ``{pattern, name?, replace?}``."""
    try:
        if isinstance(item, re.Pattern | regex.Pattern | str):
            return TextRule(compile_rule(item), where=where)
        if isinstance(item, Mapping):
            unknown = sorted(set(item) - {"pattern", "name", "replace"})
            pattern, name, fixed = item.get("pattern"), item.get("name", "text"), item.get("replace")
            if unknown or not isinstance(pattern, str | re.Pattern | regex.Pattern):
                raise ConfigError(f"{where}: a rule is {{pattern, name?, replace?}} with a "
                                  f"pattern string" + (f"; unknown {', '.join(unknown)}"
                                                       if unknown else ""), code=SCRUB)
            if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
                raise ConfigError(f"{where}: name {name!r} must be letters, digits, _ . or -",
                                  code=SCRUB)
            if fixed is not None and not isinstance(fixed, str):
                raise ConfigError(f"{where}: replace must be a string", code=SCRUB)
            return TextRule(compile_rule(pattern), name, fixed, where=f"{where} ({name})")
    except (re.error, regex.error) as exc:
        raise ConfigError(f"{where}: not a regular expression ({exc})", code=SCRUB) from None
    raise ConfigError(f"{where}: a rule is a pattern string or {{pattern, name?, replace?}}, "
                      f"got {type(item).__name__}", code=SCRUB)


class Scrubber:
    """Applies the hooks and rules to what a recording writes (identity when it has none)."""

    def __init__(self, rules: Sequence[TextRule] = (), *,
                 before_record_request: Hook | None = None,
                 before_record_chunk: Hook | None = None,
                 source: str = "the scrub configuration") -> None:
        self.rules = tuple(rules)
        self.before_record_request = before_record_request
        self.before_record_chunk = before_record_chunk
        self.source = source
        """Where the rules came from (named in errors)."""

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None, source: str) -> Scrubber:
        """From a mapping of ``SCRUB_KEYS`` (ConfigError ``SCRUB`` naming ``source``)."""
        if not config:
            return cls(source=source)
        if not isinstance(config, Mapping):
            raise ConfigError(f"{source}: give a dict of {', '.join(SCRUB_KEYS)}, got "
                              f"{type(config).__name__}", code=SCRUB)
        unknown = sorted(set(config) - set(SCRUB_KEYS))
        if unknown:
            raise ConfigError(f"{source}: unknown key(s) {', '.join(map(str, unknown))}; it takes "
                              f"{', '.join(SCRUB_KEYS)}", code=SCRUB)
        hooks: dict[str, Hook | None] = {}
        for key in ("before_record_request", "before_record_chunk"):
            hook = config.get(key)
            if hook is not None and not callable(hook):
                raise ConfigError(f"{source}: {key} must be callable, got {type(hook).__name__}",
                                  code=SCRUB)
            hooks[key] = hook
        raw = config.get("filter_text") or ()
        if isinstance(raw, str | re.Pattern | Mapping):
            raw = [raw]
        if not isinstance(raw, Sequence):
            raise ConfigError(f"{source}: filter_text is a list of rules", code=SCRUB)
        rules = [_rule(item, f"{source}: filter_text[{n}]") for n, item in enumerate(raw)]
        return cls(rules, before_record_request=hooks["before_record_request"],
                   before_record_chunk=hooks["before_record_chunk"], source=source)

    @property
    def active(self) -> bool:
        """Whether it changes anything at all."""
        return bool(self.rules or self.before_record_request or self.before_record_chunk)

    def text(self, text: str) -> str:
        """``text`` with every rule applied."""
        for rule in self.rules:
            text = rule.apply(text)
        return text

    def value(self, value: Any) -> Any:
        """``value`` with the rules applied to every string in it, except under structural
        keys (ids, names, types, roles)."""
        if not self.rules:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            return {k: v if k in STRUCTURAL_KEYS else self.value(v) for k, v in value.items()}
        return value

    def _hook(self, hook: Hook, name: str, value: dict[str, Any]) -> dict[str, Any]:
        given = copy.deepcopy(value)
        try:
            result = hook(given)
        except Exception as exc:  # noqa: BLE001 - the user's hook: its failure is named
            raise ConfigError(f"{self.source}: {name} raised {type(exc).__name__}: {exc}",
                              code=SCRUB) from exc
        result = given if result is None else result
        if not isinstance(result, dict):
            raise ConfigError(f"{self.source}: {name} must return a dict (or None), got "
                              f"{type(result).__name__}", code=SCRUB)
        return result

    def messages(self, read: Callable[[dict[str, Any]], list[RequestMessage]],
                 body: dict[str, Any]) -> list[RequestMessage]:
        """The request's messages as ``read`` takes them from the body, scrubbed for the log."""
        if not self.active:
            return read(body)
        if self.before_record_request is not None:
            body = self._hook(self.before_record_request, "before_record_request", body)
        return read(self.value(body))

    def chunks(self, chunks: list[Chunk]) -> list[Chunk]:
        """The call's chunks scrubbed for the log (as many as given, in order)."""
        if not self.active:
            return chunks
        if self.before_record_chunk is not None:
            chunks = [self._hook(self.before_record_chunk, "before_record_chunk", c)
                      for c in chunks]
        for rule in self.rules:
            def whole(pieces: list[str], rule: TextRule = rule) -> list[str]:
                return replace_spans(pieces, rule.spans("".join(pieces)))
            chunks = map_deltas(chunks, whole)
        if not self.rules:
            return chunks
        out = []
        for chunk in chunks:
            delta = DELTA_FIELDS.get(str(chunk.get("type")))
            out.append({k: v if k in STRUCTURAL_KEYS or k == delta else self.value(v)
                        for k, v in chunk.items()})
        return out

    def live(self, messages: Any) -> Any:
        """A live request's messages (what the engine journals: a chat ``messages`` list or a
        dict of the body's message fields) scrubbed as its recording was, so the divergence
        check compares like with like."""
        if not self.active or messages is None:
            return messages
        if self.before_record_request is not None:
            view = {"messages": messages} if isinstance(messages, list) else dict(messages)
            view = self._hook(self.before_record_request, "before_record_request", view)
            messages = view.get("messages") if isinstance(messages, list) else view
        return self.value(messages)


def load_scrub_file(path: str | Path) -> Scrubber:
    """Rules from a file: a Python file defining any of ``SCRUB_KEYS`` (hooks and rules), or a
    JSON / TOML file holding ``filter_text`` (rules only). ConfigError ``SCRUB`` naming it."""
    target = Path(path)
    source = str(target)
    if not target.is_file():
        raise ConfigError(f"{source}: no such scrub file; give a .py, .json or .toml file",
                          file=source, code=SCRUB)
    suffix = target.suffix.lower()
    if suffix == ".py":
        try:
            namespace = runpy.run_path(source, run_name="dsh_replay_scrub")
        except Exception as exc:  # noqa: BLE001 - the user's file: its failure is named
            raise ConfigError(f"{source}: running the scrub file failed ({type(exc).__name__}: "
                              f"{exc})", file=source, code=SCRUB) from None
        return Scrubber.from_config({key: namespace[key] for key in SCRUB_KEYS
                                     if key in namespace}, source)
    try:
        if suffix == ".json":
            config = json.loads(target.read_text(encoding="utf-8"))
        elif suffix == ".toml":
            config = tomllib.loads(target.read_text(encoding="utf-8"))
        else:
            raise ConfigError(f"{source}: a scrub file is .py (hooks and rules), .json or .toml "
                              "(filter_text rules)", file=source, code=SCRUB)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{source}: cannot read the scrub rules ({type(exc).__name__}: {exc})",
                          file=source, code=SCRUB) from None
    if isinstance(config, Mapping):
        hooks = sorted(set(config) & {"before_record_request", "before_record_chunk"})
        if hooks:
            raise ConfigError(f"{source}: {', '.join(hooks)} can only be defined in a .py scrub "
                              "file", file=source, code=SCRUB)
    return Scrubber.from_config(config, source)
