"""The main screen's panes as focus stops: one stop per pane, straight to its list (the call
pane's current tab, Live's sessions or event log); Tab cycles them, F2-F4 jump to one, ``z``
maximises the focused pane and restores the layout.

The error banner is a stop of its own while it shows (Enter opens it whole)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.widget import Widget

from ..widgets.call_pane import CallPane
from ..widgets.error_banner import ErrorBanner
from ..widgets.live_pane import LivePane
from ..widgets.scripts_view import ScriptsView

PANES = ("scripts", "call", "live")
"""The panes in Tab order (the banner goes first while it shows)."""


@dataclass(slots=True)
class Panes:
    """Which pane has focus, moving it, and zoom."""

    banner: ErrorBanner
    scripts: ScriptsView
    call: CallPane
    live: LivePane
    right: Widget
    """The column holding the call and Live panes."""
    zoomed: str | None = None
    """The pane maximised (None: the usual layout)."""

    def order(self) -> list[str]:
        """The stops in Tab order."""
        return (["banner"] if self.banner.showing else []) + list(PANES)

    def widget(self, pane: str) -> Widget:
        """A pane's widget (its border lights up while it holds focus)."""
        return {"banner": self.banner, "scripts": self.scripts, "call": self.call,
                "live": self.live}[pane]

    def target(self, pane: str) -> Widget:
        """Where focus lands in ``pane``: its list."""
        if pane == "call":
            return self.call.focus_list
        if pane == "live":
            return self.live.focus_list
        return self.widget(pane)

    def focused(self, focused: Widget | None) -> str | None:
        """The pane holding ``focused`` (None: none does, e.g. the search box)."""
        node: Widget | None = focused
        while node is not None:
            for pane in ("banner", *PANES):
                if node is self.widget(pane):
                    return pane
            parent = node.parent
            node = parent if isinstance(parent, Widget) else None
        return None

    def focus(self, pane: str) -> None:
        """Focus ``pane``'s list (a zoom moves to it)."""
        if self.zoomed is not None and pane != "banner":
            self._zoom(pane)
        self.target(pane).focus()

    def cycle(self, focused: Widget | None, step: int) -> None:
        """Focus the next (1) or previous (-1) pane."""
        order = self.order()
        current = self.focused(focused)
        index = order.index(current) if current in order else -1 if step > 0 else 0
        self.focus(order[(index + step) % len(order)])

    def toggle_zoom(self, focused: Widget | None) -> str | None:
        """Maximise the focused pane (the scripts when none has focus) or restore the layout;
        returns the pane zoomed now."""
        if self.zoomed is not None:
            self._zoom(None)
            return None
        pane = self.focused(focused)
        pane = pane if pane in PANES else "scripts"
        self._zoom(pane)
        self.target(pane).focus()
        return pane

    def _zoom(self, pane: str | None) -> None:
        self.zoomed = pane
        for name in PANES:
            widget = self.widget(name)
            widget.display = pane is None or name == pane
            widget.set_class(name == pane, "-zoomed")
        self.right.display = pane != "scripts"
