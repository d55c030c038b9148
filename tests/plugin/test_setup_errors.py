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
