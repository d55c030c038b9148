"""The plugin's server loop is closed however the process ends: by ``close`` (the loop thread
closes its own loop once stopped), or at interpreter exit when nothing closed the pool (an
interrupted session, an xdist worker stopped early): nothing is left for the garbage collector
to report after the results (``Task was destroyed``, ``BaseEventLoop.__del__``)."""

from __future__ import annotations

import subprocess
import sys

from replay_engine.testing.servers import LoopThread, ServerPool
from tests.conftest import SAMPLES


def test_close_leaves_the_loop_closed() -> None:
    thread = LoopThread()
    assert thread.call(lambda: 1 + 1) == 2
    thread.close()
    assert thread.loop.is_closed()
    thread.close()  # twice is harmless


def test_a_pool_nobody_closed_is_closed_at_exit_without_a_word() -> None:
    script = (f"from pathlib import Path\n"
              f"from replay_engine.testing.servers import ServerPool\n"
              f"pool = ServerPool()\n"
              f"pool.server(Path({str(SAMPLES / 'basic-chat')!r}))\n"
              f"print(pool.loop.loop.is_closed())\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "False\n"
    assert done.stderr == ""


def test_a_closed_pool_is_not_closed_again_at_exit() -> None:
    pool = ServerPool()
    pool.server(SAMPLES / "basic-chat")
    loop = pool.loop
    pool.close()
    assert loop.loop.is_closed()
    pool.close()
