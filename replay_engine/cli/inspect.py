"""``dsh-replay inspect SCENARIO [--json]``: the derived script of every session, per call.

The human view is one line per call (kind, origin, chunk count, finish, summary); ``--json``
prints the conformance shape (``{"ok": true, "scripts": [...], "headers": {...}}``).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..errors import ReplayError

if TYPE_CHECKING:
    from ..scenario.loading import Scenario

HELP = "show the derived scripts of a scenario"


def register(subparsers: Any) -> None:
    """Add the ``inspect`` subcommand."""
    p = subparsers.add_parser(
        "inspect", help=HELP,
        description="Load SCENARIO and print every session script: per call its kind, origin "
        "(derived / patched / replaced / appended), chunk count, finish reason and a one-line "
        "summary. Exit 0 when it loads, 1 when it does not.")
    p.add_argument("scenario", help="scenario directory (holds session.jsonl)")
    p.add_argument("--json", action="store_true", help="print the conformance JSON shape")
    p.set_defaults(handler=_cmd_inspect)


def render_scenario(scenario: Scenario) -> str:
    """The human ``inspect`` view."""
    from ..jsonnumbers import plain_number
    from ..presentation import summarize_entry
    from ..scenario.layout import generation_label

    lines: list[str] = []
    root = scenario.root or scenario.config.file or "scenario"
    lines.append(f"scenario {root}: {len(scenario.scripts)} session script(s)"
                 + (f", sidecar ({scenario.sidecar_form})" if scenario.sidecar_form else ""))
    for i, script in enumerate(scenario.scripts):
        role = "primary" if script.primary else "child"
        seed = f", seedLength {plain_number(script.seed_length)}" if script.seed_length else ""
        generation = f" ({generation_label(script.file)})" if script.file else ""
        lines.append(
            f"[{i}] {role} {script.recorded_id or '(no id)'}  createdAt "
            f"{plain_number(script.created_at)}{seed}  file {script.file or '-'}{generation}  "
            f"calls {len(script.entries)}"
        )
        summaries = [summarize_entry(item) for item in script.entries]
        key_width = max((len(s["callKey"] or "-") for s in summaries), default=1)
        for j, s in enumerate(summaries):
            key = s["callKey"] or "-"
            lines.append(
                f"    #{j:<3} {key:<{key_width}} {s['kind']:<6} {s['origin']:<8} {s['chunks']:>5} "
                f"chunks  finish={s['finish'] or '-'}  {s['summary']}"
            )
    if scenario.ignored:
        lines.append("ignored older generations: " + ", ".join(
            f"{p.name} ({generation_label(p)})" for p in scenario.ignored))
    lines.extend(f"warning: {w}" for w in scenario.warnings)
    return "\n".join(lines)


def _cmd_inspect(args: argparse.Namespace) -> int:
    import json

    from ..scenario.loading import load_scenario

    try:
        scenario = load_scenario(args.scenario)
    except ReplayError as exc:
        if args.json:
            print(json.dumps(exc.to_json()))
            return 1
        raise
    if args.json:
        print(json.dumps(scenario.to_json(), ensure_ascii=False))
    else:
        print(render_scenario(scenario))
    return 0
