"""Saving ``replay.override.json`` from several writers at once, and after a killed save.

Concurrent saves from the same base: exactly one writes, every other one fails with
SIDECAR_CHANGED and writes nothing. The writers are real ``dsh-replay override`` processes
(and drafts saved from threads, as the debugger's editor saves): the test holds the sidecar's
lock while they start, waits until the kernel lists every one of them waiting for it, then
lets them go at once.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from replay_engine import load_scenario
from replay_engine.authoring.draft import OverrideDraft, SavedSidecar
from replay_engine.errors import SidecarError
from replay_engine.files import atomic_write, exclusive_lock, lock_path

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_scenarios"
SIDE = "replay.override.json"
_exe = shutil.which("dsh-replay")
CLI = [_exe] if _exe else [sys.executable, "-m", "replay_engine.cli"]
PROC_LOCKS = Path("/proc/locks")
needs_proc_locks = pytest.mark.skipif(not PROC_LOCKS.exists(),
                                      reason="needs /proc/locks to see who waits for the lock")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A private copy of basic-chat (2 recorded calls) with a sidecar already saved once."""
    target = tmp_path / "basic-chat"
    shutil.copytree(SAMPLES / "basic-chat", target)
    draft = OverrideDraft.open(load_scenario(target))
    draft.hang_here(0)
    draft.save()
    return target


def wait_until(condition: Callable[[], bool], seconds: float = 60.0) -> bool:
    """Poll ``condition`` until it holds or the deadline passes."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def lock_waiters(inode: int) -> int:
    """How many lock requests the kernel lists as blocked on the file with this inode."""
    count = 0
    for line in PROC_LOCKS.read_text().splitlines():
        fields = line.split()
        if "->" not in fields:
            continue
        ids = [f for f in fields if f.count(":") == 2]
        if ids and int(ids[0].rsplit(":", 1)[1]) == inode:
            count += 1
    return count


def start_cli(root: Path, message: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CLI, "override", str(root), "--at", "1", "--throw", message, "--code", "SERVER"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)


def message_at_1(root: Path) -> str:
    doc = json.loads((root / SIDE).read_text(encoding="utf-8"))
    patch = next(p for p in doc["patches"] if p["at"] == 1)
    return str(patch["entry"]["message"])


def leftovers(root: Path) -> list[str]:
    """Files of ours in the directory besides the scenario, the sidecar and its backup."""
    return sorted(p.name for p in root.iterdir()
                  if p.name not in ("session.jsonl", SIDE, SIDE + ".bak"))


@needs_proc_locks
def test_twelve_concurrent_cli_saves_exactly_one_wins(root: Path) -> None:
    before = (root / SIDE).read_bytes()
    sidecar = root / SIDE
    with exclusive_lock(sidecar):
        inode = os.stat(lock_path(sidecar)).st_ino
        procs = [start_cli(root, f"writer {k}") for k in range(12)]
        all_waiting = wait_until(lambda: lock_waiters(inode) == 12
                                 or any(p.poll() is not None for p in procs))
        finished_early = [p.poll() for p in procs]
        assert all_waiting and finished_early == [None] * 12, (
            "every save must wait for the sidecar's lock", finished_early)
    results = [(p.wait(timeout=60), *p.communicate(timeout=60)) for p in procs]
    winners = [k for k, (code, _, _) in enumerate(results) if code == 0]
    assert len(winners) == 1, results
    for k, (code, out, err) in enumerate(results):
        if k in winners:
            assert err == "" and f"wrote {sidecar}" in out
            continue
        assert code == 1 and out == ""
        assert err.startswith(f"dsh-replay: error [SIDECAR_CHANGED]: {sidecar}: not saved: the "
                              "file changed on disk since this edit read it"), err
        assert "run the command again" in err and "Traceback" not in err
    assert message_at_1(root) == f"writer {winners[0]}"
    assert (root / (SIDE + ".bak")).read_bytes() == before
    assert leftovers(root) == []


@needs_proc_locks
def test_editor_saves_and_cli_saves_at_once_exactly_one_wins(root: Path) -> None:
    sidecar = root / SIDE
    drafts = []
    for k in range(4):
        draft = OverrideDraft.open(load_scenario(root))
        draft.throw_here(1, f"editor {k}", "AUTH")
        drafts.append(draft)
    outcomes: list[SavedSidecar | SidecarError | None] = [None] * len(drafts)

    def save(k: int) -> None:
        try:
            outcomes[k] = drafts[k].save()
        except SidecarError as exc:
            outcomes[k] = exc

    with exclusive_lock(sidecar):
        inode = os.stat(lock_path(sidecar)).st_ino
        threads = [threading.Thread(target=save, args=(k,)) for k in range(len(drafts))]
        for thread in threads:
            thread.start()
        procs = [start_cli(root, f"cli {k}") for k in range(4)]
        assert wait_until(lambda: lock_waiters(inode) == 8), "every save must wait for the lock"
    for thread in threads:
        thread.join(timeout=60)
    results = [(p.wait(timeout=60), *p.communicate(timeout=60)) for p in procs]
    cli_wins = [f"cli {k}" for k, (code, _, _) in enumerate(results) if code == 0]
    editor_wins = [f"editor {k}" for k, o in enumerate(outcomes) if isinstance(o, SavedSidecar)]
    assert len(cli_wins + editor_wins) == 1, (results, outcomes)
    for outcome in outcomes:
        assert isinstance(outcome, SavedSidecar | SidecarError)
        if isinstance(outcome, SidecarError):
            assert outcome.code == "SIDECAR_CHANGED" and outcome.file == str(sidecar)
    for code, _, err in results:
        assert code == 0 or "error [SIDECAR_CHANGED]" in err
    assert message_at_1(root) == (cli_wins + editor_wins)[0]
    assert leftovers(root) == []


def test_saves_from_threads_with_the_same_base(root: Path) -> None:
    """Threads released together by a barrier: one writes, the others are refused."""
    drafts = []
    for k in range(8):
        draft = OverrideDraft.open(load_scenario(root))
        draft.throw_here(1, f"thread {k}", "AUTH")
        drafts.append(draft)
    barrier = threading.Barrier(len(drafts))
    outcomes: list[str] = [""] * len(drafts)

    def save(k: int) -> None:
        barrier.wait(timeout=60)
        try:
            drafts[k].save()
            outcomes[k] = "saved"
        except SidecarError as exc:
            outcomes[k] = exc.code

    threads = [threading.Thread(target=save, args=(k,)) for k in range(len(drafts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(outcomes) == ["SIDECAR_CHANGED"] * 7 + ["saved"]
    assert message_at_1(root) == f"thread {outcomes.index('saved')}"


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=60)
    return child.pid


def test_next_save_removes_stale_temp_files_only(root: Path) -> None:
    sidecar = root / SIDE
    gone = dead_pid()
    stale = [root / f".{SIDE}.{gone}.0123456789ab.tmp",
             root / f".{SIDE}.bak.{gone}.0123456789ab.tmp",
             root / f".{SIDE}.a1b2c3d4e5f6.tmp"]  # written by a version without pids
    kept = [root / f".{SIDE}.{os.getppid()}.0123456789ab.tmp",  # its writer is alive
            root / f".{SIDE}.a1b2c3d4e5f7.tmp",  # no pid and recent: may be a live write
            root / f".{SIDE}.notes.tmp",  # not our pattern
            root / f"{SIDE}.{gone}.0123456789ab.tmp"]  # not hidden: not ours
    for path in stale + kept:
        path.write_bytes(b"partial")
    old = time.time() - 7200
    os.utime(stale[2], (old, old))
    draft = OverrideDraft.open(load_scenario(root))
    draft.throw_here(1, "after the crash", "AUTH")
    draft.save()
    assert [p.name for p in stale if p.exists()] == []
    assert [p.name for p in kept if p.exists()] == [p.name for p in kept]
    assert message_at_1(root) == "after the crash"
    assert sidecar.with_name(SIDE + ".bak").is_file()


_KILLED_WRITER = """
import sys
from replay_engine.files import atomic_write

def stop_before_rename(src: str, dst: str) -> None:
    print(src, flush=True)
    sys.stdin.read()

atomic_write(sys.argv[1], b"x" * 3_000_000, rename=stop_before_rename)
"""


def test_a_sigkilled_save_leaves_a_temp_file_the_next_save_removes(root: Path) -> None:
    sidecar = root / SIDE
    before = sidecar.read_bytes()
    writer = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, str(sidecar)], cwd=ROOT,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None
    temp = Path(writer.stdout.readline().strip())
    assert temp.parent == root and temp.stat().st_size == 3_000_000
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=60)
    assert writer.stdin is not None
    writer.stdin.close()
    writer.stdout.close()
    assert temp.exists() and sidecar.read_bytes() == before
    done = subprocess.run([*CLI, "override", str(root), "--at", "1", "--hang"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert not temp.exists()
    assert leftovers(root) == []


def test_atomic_write_keeps_a_temp_file_of_a_live_writer(tmp_path: Path) -> None:
    target = tmp_path / "file.json"
    ours = tmp_path / f".file.json.{os.getpid()}.00112233aabb.tmp"
    ours.write_bytes(b"being written")
    atomic_write(target, b"{}")
    assert ours.exists() and target.read_bytes() == b"{}"


def test_a_draft_starts_from_the_file_as_it_is_now(root: Path) -> None:
    """The draft reuses the sidecar the scenario loaded only while the file holds those bytes."""
    sidecar = root / SIDE
    scenario = load_scenario(root)
    doc = json.loads(sidecar.read_text(encoding="utf-8"))
    doc["patches"].append({"at": 1, "entry": {"kind": "hang", "readyFile": "later"}})
    sidecar.write_text(json.dumps(doc), encoding="utf-8")
    draft = OverrideDraft.open(scenario)
    assert [at for at, _ in draft.patches] == [0, 1]
    draft.remove(1)
    draft.save()
    assert [p["at"] for p in json.loads(sidecar.read_text(encoding="utf-8"))["patches"]] == [0]
    scenario = load_scenario(root)
    sidecar.write_text('{"patches": [{"at": 0}]}', encoding="utf-8")
    with pytest.raises(SidecarError) as caught:
        OverrideDraft.open(scenario)
    assert caught.value.code == "SIDECAR_INVALID" and "patch 0.entry" in caught.value.message


def test_a_sidecar_with_crlf_line_ends_saves(root: Path) -> None:
    sidecar = root / SIDE
    text = json.dumps(json.loads(sidecar.read_text(encoding="utf-8")), indent=2)
    sidecar.write_bytes(text.replace("\n", "\r\n").encode())
    draft = OverrideDraft.open(load_scenario(root))
    draft.throw_here(1, "crlf", "AUTH")
    assert draft.save().written
    assert message_at_1(root) == "crlf"
