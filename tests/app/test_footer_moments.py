"""The context footer at 80x24 in the moments a new user meets: a sidecar that does not load
offers ``o``, a file given as the scenario offers no reload, a zoomed pane always offers
``z Restore``."""

from __future__ import annotations

import pytest

from tests.app.apptools import make_app
from tests.conftest import SAMPLES

pytestmark = pytest.mark.anyio
NARROW = (80, 24)


def footer(app: object) -> list[tuple[str, str]]:
    return app.main.footer.shown  # type: ignore[attr-defined, no-any-return]


async def test_a_broken_sidecar_offers_o() -> None:
    app = make_app(SAMPLES / "broken-sidecar")
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        await pilot.pause()
        assert ("o", "Override") in footer(app), footer(app)


async def test_a_file_argument_offers_no_reload() -> None:
    app = make_app(SAMPLES / "basic-chat" / "session.jsonl")
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        await pilot.pause()
        keys = [key for key, _ in footer(app)]
        assert "l" not in keys and "E" not in keys and "q" in keys, footer(app)


@pytest.mark.parametrize("pane", ["f2", "f3", "f4"])
async def test_a_zoomed_pane_offers_restore_with_nothing_bound(pane: str) -> None:
    app = make_app(SAMPLES / "basic-chat")
    async with app.run_test(size=NARROW) as pilot:
        await app.ready.wait()
        await pilot.press(pane, "z")
        await pilot.pause()
        assert ("z", "Restore") in footer(app), footer(app)
