"""A replayed test's set-up error is reported once: the plugin fails the test outside the
handler of the error it reports, so pytest shows no chained "During handling of the above
exception" copy of it."""

from __future__ import annotations

import pytest

PROJECT_TEST = '''
import pytest


@pytest.mark.dsh_replay("scenarios/missing")
def test_missing_scenario():
    pass
'''

SCRUB_TEST = '''
import pytest


@pytest.fixture
def dsh_replay_config():
    return {"filter_text": [{"pattern": "(", "name": "bad"}]}


@pytest.mark.dsh_replay("scenarios/missing")
def test_bad_scrub_config():
    pass
'''


def test_set_up_errors_are_printed_once(pytester: pytest.Pytester,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makefile(".ini", pytest="[pytest]\naddopts = -p no:cacheprovider\n")
    pytester.makepyfile(test_setup=PROJECT_TEST, test_scrub=SCRUB_TEST)
    result = pytester.runpytest_subprocess("-p", "replay_engine.testing.pytest_plugin",
                                           timeout=110)
    result.assert_outcomes(errors=2)
    text = result.stdout.str()
    assert "During handling of the above exception" not in text
    missing = text[text.index("ERROR at setup of test_missing_scenario"):]
    missing = missing[:missing.index("short test summary")]
    assert missing.count("no such scenario directory") == 1, missing
    assert "dsh-replay: cannot serve scenarios/missing: [SCENARIO_NOT_FOUND]" in missing
    scrub = text[text.index("ERROR at setup of test_bad_scrub_config"):]
    scrub = scrub[:scrub.index("ERROR at setup of test_missing_scenario")]
    assert scrub.count("dsh-replay: [") == 1, scrub


MISUSE_TEST = '''
import pytest


@pytest.mark.dsh_replay("scenarios/missing", consumed="no")
def test_bad_value():
    pass


@pytest.mark.dsh_replay("scenarios/a", "scenarios/b")
def test_two_directories():
    pass


@pytest.mark.dsh_replay("scenarios/a", scenario="scenarios/b")
def test_named_twice():
    pass


@pytest.mark.dsh_replay("scenarios/a", strcit=True)
def test_misspelt_option():
    pass


def test_no_scenario_served(dsh_replay):
    assert dsh_replay.base_url


@pytest.mark.dsh_replay(scenario="scenarios/missing")
def test_scenario_keyword():
    pass
'''


def test_marker_misuse_is_one_line_with_no_traceback_of_the_plugin(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wrong marker or a fixture that serves nothing fails the test with one line saying how
    to write it, and the marker's ``scenario=`` (as its registered signature shows) works."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makefile(".ini", pytest="[pytest]\naddopts = -p no:cacheprovider\n")
    pytester.makepyfile(test_misuse=MISUSE_TEST)
    result = pytester.runpytest_subprocess("-p", "replay_engine.testing.pytest_plugin",
                                           timeout=110)
    result.assert_outcomes(errors=5, failed=1)
    text = result.stdout.str()
    assert "pytest_plugin.py" not in text and "replay_fixture.py" not in text, text
    assert "UsageError" not in text, text
    result.stdout.fnmatch_lines([
        "*ERROR at setup of test_bad_value*",
        "dsh-replay: @pytest.mark.dsh_replay consumed= must be True or False; use *",
        "*ERROR at setup of test_two_directories*",
        "dsh-replay: @pytest.mark.dsh_replay takes one scenario directory; use *",
        "*ERROR at setup of test_named_twice*",
        "dsh-replay: @pytest.mark.dsh_replay names its scenario twice *",
        "*ERROR at setup of test_misspelt_option*",
        "dsh-replay: @pytest.mark.dsh_replay has no option strcit; use *",
        "*ERROR at setup of test_scenario_keyword*",
        "dsh-replay: cannot serve scenarios/missing: [[]SCENARIO_NOT_FOUND[]]*",
    ], consecutive=False)
    result.stdout.fnmatch_lines([
        "*test_no_scenario_served*",
        "dsh-replay: dsh_replay serves no scenario to this test: mark it with *",
    ], consecutive=False)


def test_a_bad_ini_flag_names_its_key(pytester: pytest.Pytester,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makefile(".ini", pytest="[pytest]\ndsh_replay_socket = maybe\n")
    pytester.makepyfile(test_plain="def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "replay_engine.testing.pytest_plugin",
                                           timeout=110)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini dsh_replay_socket: *'maybe'*; write true or false"])
