"""A call's Output view: its assembled blocks, usage, finish and error, as the call pane's
Output tab and the review screen's two sides show it."""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Group, RenderableType
from rich.text import Text

from replay_engine import ScriptEntry

from ..headless.callview import assemble, pretty_arguments
from ..headless.scriptinfo import show_tokens


def output_view(title: Text, item: ScriptEntry, ids: Mapping[int, str]) -> RenderableType:
    """``title``, then what the agent ends up with after the call streamed."""
    out = assemble(item)
    parts: list[RenderableType] = [title]
    for block in out.blocks:
        if block.kind == "tool-call":
            head = f"── tool call {block.name or '?'}" + (f" ({block.call_id})" if block.call_id else "")
            parts += [Text(head, style="bold cyan"),
                      Text(show_tokens(pretty_arguments(block.text), ids))]
        else:
            style = "bold magenta" if block.kind == "reasoning" else "bold green"
            parts += [Text(f"── {block.kind}", style=style),
                      Text(show_tokens(block.text, ids),
                           style="italic" if block.kind == "reasoning" else "")]
    if out.usage is not None:
        usage = " · ".join(f"{k} {v}" for k, v in out.usage.items())
        parts.append(Text(f"── usage: {usage}", style="yellow"))
    parts.append(Text(f"── finish: {out.finish or '-'}", style="bold"))
    if out.error:
        parts.append(Text(f"── {show_tokens(out.error, ids)}", style="bold red"))
    return Group(*parts)
