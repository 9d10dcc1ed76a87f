"""Fixture tests for proofgraph's report parser (pytest JUnit XML output).

4 pass (one test parametrized twice), 1 fail, 1 skip, 1 xfail, 1 error in a fixture.
"""

import pytest


def add(a, b):
    return a + b


def test_adds_two_numbers():
    assert add(1, 2) == 3


@pytest.mark.parametrize("a,b,expected", [(-1, -2, -3), (0, 0, 0)])
def test_adds_param(a, b, expected):
    assert add(a, b) == expected


def test_fails_on_purpose():
    assert add(2, 2) == 5


@pytest.mark.skip(reason="not ready")
def test_is_skipped():
    assert False


@pytest.mark.xfail(reason="known bug 123")
def test_known_failure():
    assert add(1, 1) == 3


@pytest.fixture
def broken_fixture():
    raise RuntimeError("fixture setup failed on purpose")


def test_uses_broken_fixture(broken_fixture):
    assert broken_fixture


class TestGrouped:
    def test_in_class(self):
        assert add(2, 3) == 5
