"""The one module of `broken/` that imports: 1 passing test."""


def test_still_runs():
    assert 1 + 1 == 2
