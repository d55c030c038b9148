"""Benchmark: the pytest plugin's cost per test beside a vcrpy cassette, in the same run.

Run by hand: ``python3 benchmarks/pytest_cost.py [--tests 200] [--rounds 5] [--files ...]``.
Generated test files of ``--tests`` tests each run in fresh pytest processes, interleaved
round by round, in two client forms side by side, each with its own baseline.

The per-test client form is how tests are usually written: each test builds its own openai
client (``own-baseline`` makes no call; ``own-plugin`` is marked and reads the plugin's
``OPENAI_BASE_URL``, served in process by the plugin's wrapped httpx transports;
``own-socket`` is the same file with ``--dsh-replay-socket``, as every such test was served
before; ``own-vcrpy`` replays the cassette). In the shared form every test builds its openai
client on one httpx client the file makes once (``openai.DefaultHttpxClient()``, or the
in-process one), so that no file pays the TLS setup a default client costs per test:

- ``baseline``: each test builds its openai client and makes no call (the floor);
- ``plugin``: each test is marked ``@pytest.mark.dsh_replay(sample_scenarios/basic-chat)``
  and makes that scenario's two streaming calls with the openai SDK (the base URL from
  ``OPENAI_BASE_URL``, which the plugin sets), served in process; ``plugin-socket`` is the
  same file over a socket (``--dsh-replay-socket``);
- ``vcrpy``: each test makes the same two calls inside ``vcr.use_cassette`` of a cassette
  recorded once from ``dsh-replay serve`` of the same scenario;
- ``in-process``: as ``plugin``, with ``http_client=dsh_replay.http_client()``.

Reported, for the median and the best wall time of each file (the best is the least
disturbed by other load on the machine) and for the median CPU time (both threads): the
cost per test over the baseline ((file - baseline) / tests), and each replay's cost as a
ratio of vcrpy's in the same form. Target: the plugin's runs <= 1.0x vcrpy in both forms.
Every file runs once unmeasured first, filling a bytecode cache of the run's own
(``PYTHONPYCACHEPREFIX``) that the measured runs read: a source checkout, or
``PYTHONDONTWRITEBYTECODE`` set in the shell, would otherwise charge the replay files for
compiling the modules only they load. Needs ``vcrpy`` (a benchmark-only
dependency).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "sample_scenarios" / "basic-chat"

CALLS = '''
def two_calls(client):
    for question in ("What files are in the workspace?", "Say hello."):
        stream = client.chat.completions.create(
            model="deepseek-chat", stream=True,
            messages=[{"role": "user", "content": question}])
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text.endswith("Hello!"), text
'''

TESTS = '''
import openai, pytest
{imports}
HTTP = openai.DefaultHttpxClient()

def make(i):
    {marker}
    def test({fixture}):
        {body}
    return test

for i in range({n}):
    globals()[f"test_{{i}}"] = make(i)
'''

FILES = {
    "baseline": dict(imports="", marker="", fixture="",
                     body='openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k", '
                          "http_client=HTTP)"),
    "plugin": dict(imports="", marker="@pytest.mark.dsh_replay({scenario!r})", fixture="",
                   body="two_calls(openai.OpenAI(max_retries=0, http_client=HTTP))"),
    "vcrpy": dict(imports="import vcr", marker="", fixture="",
                  body='with vcr.use_cassette({cassette!r}, record_mode="none"):\n'
                       '            two_calls(openai.OpenAI(base_url={url!r}, api_key="k", '
                       "max_retries=0, http_client=HTTP))"),
    "in-process": dict(imports="", marker="@pytest.mark.dsh_replay({scenario!r})",
                       fixture="dsh_replay",
                       body="two_calls(openai.OpenAI(max_retries=0, "
                            "http_client=dsh_replay.http_client()))"),
    # The per-test client form: each test builds its own openai client (and so its own httpx
    # client), as tests are usually written; the plugin's base URL comes from OPENAI_BASE_URL.
    "own-baseline": dict(imports="", marker="", fixture="",
                         body='openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k")'),
    "own-plugin": dict(imports="", marker="@pytest.mark.dsh_replay({scenario!r})", fixture="",
                       body="two_calls(openai.OpenAI(max_retries=0))"),
    "own-vcrpy": dict(imports="import vcr", marker="", fixture="",
                      body='with vcr.use_cassette({cassette!r}, record_mode="none"):\n'
                           '            two_calls(openai.OpenAI(base_url={url!r}, api_key="k", '
                           "max_retries=0))"),
}
RUNS: dict[str, tuple[str, tuple[str, ...]]] = {
    "baseline": ("baseline", ()),
    "plugin": ("plugin", ()),
    "plugin-socket": ("plugin", ("--dsh-replay-socket",)),
    "vcrpy": ("vcrpy", ()),
    "in-process": ("in-process", ()),
    "own-baseline": ("own-baseline", ()),
    "own-plugin": ("own-plugin", ()),
    "own-socket": ("own-plugin", ("--dsh-replay-socket",)),
    "own-vcrpy": ("own-vcrpy", ()),
}
"""Each measured run: its file and pytest options. ``plugin`` and ``own-plugin`` are served in
process by the plugin's wrapped httpx transports; the ``-socket`` runs opt out of that
(``--dsh-replay-socket``), which is how every test without ``dsh_replay.http_client()`` was
served before."""
FORMS = {
    "shared httpx client (one per file)": ("baseline", ("plugin", "plugin-socket", "in-process",
                                                        "vcrpy")),
    "per-test client (as tests are usually written)": ("own-baseline", ("own-plugin", "own-socket",
                                                                        "own-vcrpy")),
}
"""Each client form: its baseline and its runs (the last, vcrpy, is what the others are
compared with)."""

RECORD = '''
import openai, vcr
with vcr.use_cassette({cassette!r}, record_mode="all"):
    two_calls(openai.OpenAI(base_url={url!r}, api_key="k", max_retries=0))
'''


def record_cassette(work: Path) -> tuple[Path, str]:
    """Record the scenario's two calls through vcrpy from a real ``dsh-replay serve``."""
    url_file = work / "url"
    cassette = work / "basic-chat.yaml"
    server = subprocess.Popen([sys.executable, "-m", "replay_engine.cli", "serve", str(SCENARIO),
                               "--port", "0", "--url-file", str(url_file)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    try:
        deadline = time.monotonic() + 30
        while not url_file.exists():
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("dsh-replay serve did not start")
            time.sleep(0.05)
        url = url_file.read_text().strip() + "/v1"
        script = work / "record.py"
        script.write_text(CALLS + RECORD.format(cassette=str(cassette), url=url))
        subprocess.run([sys.executable, str(script)], check=True, cwd=work)
    finally:
        server.terminate()
        server.wait(timeout=30)
    return cassette, url


def run_file(path: Path, pycache: Path, options: tuple[str, ...] = ()) -> tuple[float, float]:
    """Wall and CPU seconds of one pytest process running ``path`` (which must pass), with
    compiled modules kept in ``pycache`` (as an installed package has them: a module's first
    compilation is no cost of a test)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "-p", "no:randomly", *options, str(path)], cwd=path.parent, env=env,
                            capture_output=True, text=True)
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"{path.name} failed:\n{result.stdout[-3000:]}\n{result.stderr[-2000:]}")
    return took, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def report(label: str, seconds: dict[str, float], tests: int) -> None:
    """Print one statistic of every run, per client form: the cost per test over the form's
    baseline, and each replay's cost as a ratio of that form's vcrpy."""
    print(f"{label}:")
    for form, (baseline, runs) in FORMS.items():
        if baseline not in seconds:
            continue
        print(f"  {form}:")
        print(f"    {baseline:14s} {seconds[baseline]:7.2f} s")
        per_test = {name: (seconds[name] - seconds[baseline]) / tests * 1000
                    for name in runs if name in seconds}
        vcr = next((name for name in reversed(runs) if "vcrpy" in name and name in per_test), None)
        for name, cost in per_test.items():
            ratio = f"   {cost / per_test[vcr]:.2f}x vcrpy" if vcr and name != vcr else ""
            print(f"    {name:14s} {seconds[name]:7.2f} s   per test over baseline: "
                  f"{cost:6.2f} ms{ratio}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--files", default=",".join(RUNS),
                        help="which runs to measure (comma-separated, of: "
                             f"{', '.join(RUNS)}); a form's baseline is always run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dsh-replay-pytest-cost-") as tmp:
        work = Path(tmp)
        cassette, url = record_cassette(work)
        wanted = set(args.files.split(","))
        names = [name for name in RUNS if name in wanted or any(
            name == base and wanted & set(runs) for base, runs in FORMS.values())]
        paths = {}
        for file in {RUNS[name][0] for name in names}:
            parts = {key: value.format(scenario=str(SCENARIO), cassette=str(cassette), url=url)
                     for key, value in FILES[file].items()}
            paths[file] = work / f"test_{file.replace('-', '_')}.py"
            paths[file].write_text(CALLS + textwrap.dedent(TESTS.format(n=args.tests, **parts)))
        times: dict[str, list[float]] = {name: [] for name in names}
        cpus: dict[str, list[float]] = {name: [] for name in names}
        pycache = work / "pycache"
        for path in paths.values():  # compiles every module the files load, once
            run_file(path, pycache)
        for _ in range(args.rounds):
            for name in names:
                file, options = RUNS[name]
                wall, cpu = run_file(paths[file], pycache, options)
                times[name].append(wall)
                cpus[name].append(cpu)
    print(f"{args.tests} tests per file, {args.rounds} rounds")
    report("median wall", {name: statistics.median(v) for name, v in times.items()}, args.tests)
    report("best wall (least disturbed by other load)",
           {name: min(v) for name, v in times.items()}, args.tests)
    report("median CPU (both threads)", {name: statistics.median(v) for name, v in cpus.items()},
           args.tests)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
