"""``dsh-replay override``: write one patch of ``replay.override.json`` from the command line.

Same validation and atomic write as the debugger's override editor; prints the
effective primary script afterwards. Usage errors exit 2, input errors exit 1.

A primary log whose call never finished cannot load, so its sidecar must be a bare list:
``--at N --throw/--hang`` on such a scenario writes every call as recorded except call N.
``--throw`` on an unfinished call keeps all of its recorded chunks unless ``--prefix`` says
otherwise (what the live stream sent before it broke); ``--at`` may be repeated to give
several calls, e.g. every unfinished one, the same entry.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..authoring.draft import EntryComparison, OverrideDraft, SavedSidecar
from ..authoring.unfinished import open_draft
from ..errors import InputError
from ..presentation import summarize_entry
from ..scenario.layout import not_a_file
from ..statuscodes import throw_code_warning

_USAGE = (
    "dsh-replay override SCENARIO (--at N [--at N…] | --append) "
    "(--throw MESSAGE --code CODE [--prefix K] | --hang [--ready-file F] | --chunks-file FILE)\n"
    "       dsh-replay override SCENARIO --remove N"
)


def register(subparsers: Any) -> None:
    """Add the ``override`` subcommand."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "override",
        help="patch one call of the primary script in replay.override.json",
        usage=_USAGE,
        description=(
            "Write one patch of the scenario's replay.override.json (primary session only), "
            "validated like a load and written atomically; the previous file is kept as "
            "replay.override.json.bak. A bare-list sidecar stays a bare list: --at/--remove then "
            "address its entries. A log whose call never finished gets a bare list: every call as "
            "recorded except the ones given with --at."
        ),
    )
    p.add_argument("scenario", help="scenario directory (holds session.jsonl)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--at", type=int, action="append", metavar="N",
                       help="the call to replace (0-based); repeat it to give several calls the "
                       "same entry (e.g. every call that never finished)")
    where.add_argument("--append", action="store_true",
                       help="add a call after the last one (the retry slot after a throw)")
    where.add_argument("--remove", type=int, metavar="N",
                       help="drop the patch of call N (back to the derived entry)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--throw", metavar="MESSAGE", help="fail the call with MESSAGE")
    what.add_argument("--hang", action="store_true", help="hang the call until cancelled")
    what.add_argument("--chunks-file", metavar="FILE",
                      help="JSON file: a list of chunks, or a whole entry")
    p.add_argument("--code", help="failure code of --throw (AUTH, RATE_LIMIT, SERVER, HTTP_503…)")
    p.add_argument("--prefix", type=int, metavar="K",
                   help="with --throw: keep the first K recorded chunks before failing (default 0; "
                   "all of them for a call that never finished)")
    p.add_argument("--ready-file", metavar="F", help="with --hang: file created once it waits")
    p.add_argument("--dry-run", action="store_true",
                   help="print the effective script and the document without writing")
    p.set_defaults(handler=_cmd_override, parser=p)


def _usage_problem(args: argparse.Namespace) -> str | None:
    action = args.throw is not None or args.hang or args.chunks_file is not None
    if args.remove is not None:
        if action or args.code is not None or args.prefix is not None or args.ready_file:
            return "--remove N takes no other option"
        return None
    if args.at is None and not args.append:
        return "say which call: --at N or --append (or --remove N)"
    if not action:
        return "say what the call does: --throw MESSAGE --code CODE, --hang or --chunks-file FILE"
    if args.throw is not None and args.code is None:
        return "--throw needs --code CODE"
    if args.throw is None and (args.code is not None or args.prefix is not None):
        return "--code and --prefix go with --throw"
    if args.ready_file is not None and not args.hang:
        return "--ready-file goes with --hang"
    return None


def _read_chunks_file(name: str) -> str:
    kind = not_a_file(name)
    if kind is not None:
        raise InputError(f"{name}: the --chunks-file is {kind}; pass a JSON file holding a list "
                         "of chunks or an entry.", file=name)
    try:
        return Path(name).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{name}: no such file; --chunks-file takes a JSON file holding a list "
                         "of chunks or an entry.", file=name) from None
    except UnicodeDecodeError:
        raise InputError(f"{name}: not UTF-8 text; save it as UTF-8 JSON.", file=name) from None
    except OSError as exc:
        raise InputError(f"{name}: cannot read it ({exc.strerror}).", file=name) from None


def _apply(draft: OverrideDraft, args: argparse.Namespace) -> str:
    if args.remove is not None:
        draft.remove(args.remove)
        return f"removed call {args.remove}"
    indices: list[int] = [draft.append_index()] if args.append else list(dict.fromkeys(args.at))
    calls = ("calls " if len(indices) > 1 else "call ") + ", ".join(map(str, indices))
    text = _read_chunks_file(args.chunks_file) if args.chunks_file is not None else None
    for index in indices:
        if args.throw is not None:
            prefix = draft.default_prefix(index) if args.prefix is None else args.prefix
            draft.throw_here(index, args.throw, args.code, prefix)
        elif args.hang:
            draft.hang_here(index, args.ready_file)
        else:
            assert text is not None
            draft.set_entry_text(index, text, args.chunks_file)
    if args.throw is not None:
        warning = throw_code_warning(args.code)
        if warning is not None:
            print(f"dsh-replay: warning: {warning}", file=sys.stderr)
        return f"{calls} {'throw' if len(indices) > 1 else 'throws'} {args.code}"
    if args.hang:
        return f"{calls} {'hang' if len(indices) > 1 else 'hangs'}"
    return f"{calls} set from {args.chunks_file}"


def render_comparison(rows: list[EntryComparison]) -> list[str]:
    """One line per effective call (``*`` marks calls that differ from the derived script)."""
    lines: list[str] = []
    for row in rows:
        item = row.effective
        if item is None:
            lines.append(f"  * #{row.index} (no call: the derived call is dropped)")
            continue
        s = summarize_entry(item)
        key = f" {s['callKey']}" if s["callKey"] else ""
        mark = "*" if row.changed else " "
        lines.append(
            f"  {mark} #{row.index}{key} {s['kind']:<6} {s['origin']:<8} {s['chunks']:>5} chunks"
            f"  finish={s['finish'] or '-'}  {s['summary']}"
        )
        if row.notes:
            lines.append("        " + "; ".join(row.notes))
        if row.chunk_changes:
            counts = {op: sum(1 for c in row.chunk_changes if c.op == op)
                      for op in ("same", "removed", "added")}
            lines.append(f"        chunks vs derived: {counts['same']} kept, "
                         f"{counts['removed']} removed, {counts['added']} added")
    return lines


def _report(draft: OverrideDraft, what: str, saved: SavedSidecar | None) -> str:
    rows = draft.compare()
    count = sum(1 for row in rows if row.effective is not None)
    if saved is None:
        head = f"dry run: {what}; {draft.path} not written ({draft.form} form):\n{draft.render()}"
    elif not saved.written:
        head = f"{what}; {draft.path} already holds this content, nothing written"
    else:
        kept = f"; previous file kept as {saved.backup.name}" if saved.backup else ""
        head = f"{what}; wrote {draft.path} ({draft.form} form{kept})"
    lines = [head]
    if draft.unfinished and draft.derived is not None:
        calls = ", ".join(f"#{i} ({draft.derived[i].call_key})" for i in draft.unfinished)
        lines.append(f"the log's call(s) {calls} never finished while recorded, so the sidecar is "
                     "a bare list replacing the whole primary script")
    lines += [f"effective primary script ({count} call(s); * = differs from the "
             "derived script):", *render_comparison(rows)]
    return "\n".join(lines)


def _cmd_override(args: argparse.Namespace) -> int:
    problem = _usage_problem(args)
    if problem is not None:
        parser: argparse.ArgumentParser = args.parser
        parser.error(problem)
    draft = open_draft(args.scenario)
    what = _apply(draft, args)
    if args.dry_run:
        draft.validate()
        saved = None
    else:
        try:
            saved = draft.save()
        except OSError as exc:
            raise InputError(
                f"{draft.path}: cannot write the sidecar ({exc.strerror or exc}); the file on disk "
                "is unchanged. Check that the scenario directory is writable and has free space.",
                file=str(draft.path)) from None
    print(_report(draft, what, saved))
    return 0
