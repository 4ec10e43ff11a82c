"""The fast tier (`pytest -m fast`): chosen by what a test asks for, and kept fast by a guard."""

from __future__ import annotations

import pytest

from services.data import embedded, runtime


def test_tiers_a_test_without_database_or_server_is_fast(request):
    assert request.node.get_closest_marker("fast") is not None


def test_tiers_a_test_of_the_sessions_database_is_not_fast(request, db):
    assert request.node.get_closest_marker("fast") is None
    assert db.health().ok  # and it may use the database


@pytest.mark.server
def test_tiers_a_server_test_is_not_fast(request):
    assert request.node.get_closest_marker("fast") is None


@pytest.mark.parametrize("reach", [runtime.get_db, runtime.get_app_db, embedded.start])
def test_tiers_a_fast_test_that_reaches_for_a_database_fails_saying_what_to_do(reach):
    with pytest.raises(RuntimeError, match="fast tier reached for a database or a server. Ask for the `db`"):
        reach()
