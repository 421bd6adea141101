"""pytest plugin for the OpenAI Agents SDK's own tests (from its sdist): every `SQLiteSession`
the tests make is a ContextStoreSession from make_test_session instead; the tests are
otherwise unmodified.

SQLiteSession(session_id, db_path) instances on the same file share data; on ":memory:" each
has its own. Both hold here: the namespace is per test and per database path (a fresh one for
each in-memory instance). Sessions are not closed by the harness: tests close what they use.
"""

import inspect
import sys
import uuid
from typing import Any

import pytest
from agents import SQLiteSession as RealSQLiteSession
from contextstore_client.adapters.openai_agents import ContextStoreSession, make_test_session


class FactorySession(ContextStoreSession):
    """Stands where SQLiteSession(session_id, db_path, session_settings=...) stood: a class,
    so tests that patch methods on it still can. Sessions on the same db_path share data
    (one namespace per test and path); each ":memory:" one has its own."""

    test_namespace = ""

    def __init__(self, session_id: str, db_path: Any = ":memory:", *args: Any,
                 session_settings: Any = None, **kwargs: Any):
        where = str(db_path)
        own = uuid.uuid4().hex[:8] if where == ":memory:" else uuid.uuid5(uuid.NAMESPACE_URL, where).hex[:12]
        made = make_test_session(session_id, namespace=f"{self.test_namespace}-{own}",
                                 session_settings=session_settings)
        super().__init__(session_id, made.client, namespace=f"{self.test_namespace}-{own}",
                         session_settings=made.session_settings)
        self._owned = True


@pytest.fixture(autouse=True)
def sessions_in_contextstore(monkeypatch: pytest.MonkeyPatch) -> Any:
    factory = type("SQLiteSessionInContextStore", (FactorySession,),
                   {"test_namespace": uuid.uuid4().hex[:12]})
    # The suite's modules (not the SDK's own) that imported the real class.
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] != "agents" and getattr(module, "SQLiteSession", None) is RealSQLiteSession:
            monkeypatch.setattr(module, "SQLiteSession", factory)
    yield


# Tests of SQLiteSession's own machinery (its sqlite3 connections, file locks, rows corrupted
# through sqlite3, rollbacks, and its "SQLiteSession is closed" message), not of the Session
# contract: they reach into attributes only SQLiteSession has.
SQLITE_INTERNALS = {
    "test_sqlite_session_close_closes_worker_thread_connections",
    "test_sqlite_session_reaps_connections_from_exited_worker_threads",
    "test_sqlite_session_closes_retired_connections_before_the_next_allocation",
    "test_sqlite_session_keeps_connections_of_live_worker_threads",
    "test_sqlite_session_closed_rejects_empty_add_items",
    "test_sqlite_session_pop_item_skips_corrupt_most_recent",
    "test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows",
    "test_sqlite_session_get_items_limit_skips_corrupt_newest_rows",
    "test_sqlite_session_get_items_session_settings_limit_skips_corrupt_rows",
    "test_sqlite_session_file_lock_is_shared_across_instances",
    "test_sqlite_session_failed_add_items_releases_write_lock",
    "test_sqlite_session_failed_clear_session_rolls_back",
    "test_sqlite_session_failed_pop_item_releases_write_lock",
    "test_sqlite_session_rollback_failure_evicts_connection",
    "test_sqlite_session_close_retries_quarantined_connection",
    "test_sqlite_session_post_commit_cancellation_propagates_after_known_outcome",
    # Drives SQLiteSession's private _insert_items inside its worker thread.
    "test_handoff_resume_after_cancelled_compaction_commits",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Drop SQLiteSession-internals tests; outside tests/memory keep only the tests that
    persist through a session (those that make a SQLiteSession)."""
    keep, drop = [], []
    for item in items:
        function = getattr(item, "function", None)
        name = getattr(item, "originalname", item.name)
        source = inspect.getsource(function) if function is not None else ""
        in_memory_suite = "/tests/memory/" in str(item.path)
        if name in SQLITE_INTERNALS or (not in_memory_suite and "SQLiteSession(" not in source):
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
