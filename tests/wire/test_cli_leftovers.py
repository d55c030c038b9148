"""The CLI leaves nothing behind in the user's directories: ``serve`` without ``--ready-dir``
puts hang markers in a temporary directory of its own (named in its hang line) and removes it
at exit; ``record`` on a busy port exits 4 without creating the scenario directory."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

from replay_engine.presentation import EXIT_NOT_SERVING
from tests.conftest import SAMPLES

CLI = [sys.executable, "-m", "replay_engine.cli"]


def test_serve_keeps_hang_markers_out_of_the_current_directory(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    serve = subprocess.Popen([*CLI, "serve", str(SAMPLES / "hang-ready-file"), "--port", "0"],
                             cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert serve.stdout is not None
        url = serve.stdout.readline().strip()
        demo = subprocess.run([*CLI, "demo-agent", url], cwd=work, capture_output=True,
                              text=True, timeout=60)
        assert demo.returncode == 0, demo.stdout + demo.stderr
    finally:
        serve.send_signal(signal.SIGTERM)
        _, err = serve.communicate(timeout=20)
    assert serve.returncode == 0, err
    [marker] = re.findall(r"readyFile (\S+)\)", err)
    assert Path(marker).name == "hang-ready.marker"
    assert Path(marker).parent.name.startswith("dsh-replay-ready-")
    assert not Path(marker).parent.exists()  # removed at exit
    assert list(work.iterdir()) == []


def test_record_on_a_busy_port_leaves_no_directory(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        target = tmp_path / "new-scenario"
        done = subprocess.run([*CLI, "record", str(target), "--upstream", "http://127.0.0.1:9",
                               "--port", str(port)], capture_output=True, text=True, timeout=60)
    assert done.returncode == EXIT_NOT_SERVING, done.stderr
    assert "Traceback" not in done.stderr
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []
