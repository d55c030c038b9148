"""The docs and the code agree: every command, option and choice that ``dsh-replay`` and
``dsh-replay-tui`` accept, every pytest option, every key, every error code and every public
name of the library appears in the documentation under docs/."""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

import pytest
from dsh_replay_tui import keymap
from dsh_replay_tui.__main__ import build_parser as build_tui_parser

import replay_engine
from replay_engine.cli.dispatch import SUBCOMMAND_MODULES
from replay_engine.cli.dispatch import build_parser as build_cli_parser
from replay_engine.statuscodes import STATUS_BY_CODE

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _docs_text() -> str:
    return "\n".join(page.read_text(encoding="utf-8") for page in sorted(DOCS.glob("*.md")))


def _options(parser: argparse.ArgumentParser) -> list[tuple[str, list[str]]]:
    """Each long option of ``parser`` (help aside) with the choices it takes."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
            continue
        for flag in action.option_strings:
            if flag.startswith("--"):
                found.append((flag, [str(choice) for choice in action.choices or ()]))
    return found


def _subparser(name: str) -> argparse.ArgumentParser:
    parser = build_cli_parser(name)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    chosen: argparse.ArgumentParser = sub.choices[name]
    return chosen


def _cli_cases() -> list[tuple[str, str, list[str]]]:
    cases = [("dsh-replay", flag, choices) for flag, choices in _options(build_cli_parser(""))]
    for name in SUBCOMMAND_MODULES:
        cases += [(f"dsh-replay {name}", flag, choices) for flag, choices in _options(_subparser(name))]
    cases += [("dsh-replay-tui", flag, choices) for flag, choices in _options(build_tui_parser())]
    return cases


@pytest.mark.parametrize("name", list(SUBCOMMAND_MODULES))
def test_every_subcommand_is_documented(name: str) -> None:
    assert f"dsh-replay {name}" in _docs_text(), f"no page of docs/ shows `dsh-replay {name}`"


@pytest.mark.parametrize(("command", "flag", "choices"), _cli_cases(),
                         ids=lambda value: value if isinstance(value, str) else None)
def test_every_option_and_choice_is_documented(command: str, flag: str, choices: list[str]) -> None:
    text = _docs_text()
    assert re.search(re.escape(flag) + r"(?![\w-])", text), f"{command} {flag} is not in docs/"
    for choice in choices:
        in_code = re.search(rf"`{re.escape(flag)} [^`]*\b{re.escape(choice)}\b", text)
        assert f"{flag} {choice}" in text or in_code, f"{command} {flag} {choice} is not in docs/"


def test_the_option_lists_are_not_empty() -> None:
    flags = {flag for _, flag, _ in _cli_cases()}
    assert {"--json", "--port", "--upstream", "--dialect", "--mode", "--record", "--version"} <= flags


def test_every_pytest_option_is_documented() -> None:
    source = "\n".join(path.read_text(encoding="utf-8")
                       for path in (ROOT / "replay_engine" / "testing").glob("*.py"))
    flags = set(re.findall(r'"(--dsh-replay[a-z-]*)"', source))
    assert {"--dsh-replay-debug", "--dsh-replay-record"} <= flags
    page = (DOCS / "pytest.md").read_text(encoding="utf-8")
    assert [flag for flag in sorted(flags) if f"`{flag}" not in page] == []


def test_every_key_is_in_the_keys_page() -> None:
    page = (DOCS / "keys.md").read_text(encoding="utf-8")
    missing = [key.keys for key in keymap.TABLE
               if f"`{key.display or key.keys.split(',')[0]}`" not in page or key.help not in page]
    assert missing == [], f"keys missing from docs/keys.md: {missing}"


def _error_codes() -> set[str]:
    """Every code replay_engine/errors.py defines (class codes and code constants), the throw
    codes of the status table, and every literal ``code="..."`` the package raises with."""
    tree = ast.parse((ROOT / "replay_engine" / "errors.py").read_text(encoding="utf-8"))
    codes = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in ("code", node.value.value)):
            codes.add(node.value.value)
    codes |= set(STATUS_BY_CODE)
    for folder in ("replay_engine", "app"):
        for path in (ROOT / folder).rglob("*.py"):
            codes |= set(re.findall(r'code="([A-Z][A-Z_]+)"', path.read_text(encoding="utf-8")))
    return codes


def test_every_error_code_has_a_troubleshooting_entry() -> None:
    codes = _error_codes()
    assert {"LOG_PARSE", "UNFINISHED_CALL", "SCRIPT_EXHAUSTED", "RATE_LIMIT", "LOG_UNREADABLE"} <= codes
    page = (DOCS / "troubleshooting.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^### `([A-Z_<>n]+)`$", page, re.MULTILINE))
    assert sorted(codes - headings) == []


def test_every_public_name_is_in_the_api_page() -> None:
    page = (DOCS / "api.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"`(\w+)[`(]", page))  # `name` or `name(args)`
    assert [name for name in replay_engine.__all__ if name not in listed] == []


def test_every_format_citation_in_the_code_has_its_anchor() -> None:
    """The code cites the scenario format as ``docs/format.md#<anchor>`` (and further anchors
    in the same citation); each must be an anchor of docs/format.md."""
    page = (DOCS / "format.md").read_text(encoding="utf-8")
    anchors = set(re.findall(r"\{#([a-z0-9-]+)\}", page))
    cited: dict[str, str] = {}
    for folder in ("replay_engine", "app", "tests", "benchmarks"):
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            for match in re.finditer(r"docs/format\.md:?((?:[#, ]|and|to|\n\s*)*#[a-z0-9-]+)+", text):
                for anchor in re.findall(r"#([a-z0-9-]+)", match.group(0)):
                    cited.setdefault(anchor, str(path.relative_to(ROOT)))
    assert len(cited) >= 20
    assert {anchor: where for anchor, where in cited.items() if anchor not in anchors} == {}


def _long_paragraphs(text: str) -> list[tuple[int, int]]:
    """(first line, length) of each paragraph or list item over ten lines, code blocks aside."""
    found, in_code, run, start = [], False, 0, 0
    for number, line in enumerate([*text.split("\n"), ""], 1):
        if line.startswith("```"):
            in_code, run = not in_code, 0
            continue
        if in_code:
            continue
        stripped = line.strip()
        item = stripped.startswith(("- ", "* ")) or re.match(r"\d+\. ", stripped) is not None
        if stripped == "" or item or stripped.startswith(("|", "#", "<!--", "![")):
            if run > 10:
                found.append((start, run))
            run, start = (1, number) if item else (0, number)
            continue
        if run == 0:
            start = number
        run += 1
    return found


def test_no_paragraph_of_the_docs_is_over_ten_lines() -> None:
    assert _long_paragraphs("a\n" * 11) == [(1, 11)]
    pages = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted(DOCS.glob("*.md"))]
    long = {page.name: _long_paragraphs(page.read_text(encoding="utf-8")) for page in pages}
    assert {name: found for name, found in long.items() if found} == {}


def test_the_readme_is_a_first_page() -> None:
    """Under 200 lines, the two set-up commands first, and a link to every page of the docs."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 200
    assert readme.split("\n")[2:6] == [
        "```sh", "python3 -m pip install -e '.[dev]' && dsh-replay-tui sample_scenarios/basic-chat",
        "python3 -m pytest", "```"]
    assert [page.name for page in sorted(DOCS.glob("*.md")) if f"(docs/{page.name})" not in readme] == []


def test_no_table_cell_escapes_a_pipe() -> None:
    """mkdocs renders ``\\|`` inside a code span of a table with its backslash: name the
    choices one by one instead."""
    pages = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
    assert [page.name for page in pages if "\\|" in page.read_text(encoding="utf-8")] == []
