"""A module pytest cannot collect: its import fails (a collection error, not a test)."""

import module_that_does_not_exist  # noqa: F401


def test_never_collected():
    assert True
