"""pytest plugin to run ADK's own session-service tests (tests/unittests/sessions/
test_session_service.py of adk-python v2.0.0, which is not on PyPI and not part of this
repository) against ContextStoreSessionService: every service the tests make comes from
make_test_service; only the backend-parametrised contract tests and the two stale-writer
tests are kept (the others test DatabaseSessionService / SqliteSessionService internals).

    cp <adk-python>/tests/unittests/sessions/test_session_service.py var/adk-tests/
    CONTEXTSTORE_URL=... CONTEXTSTORE_TOKEN=... PYTHONPATH=. .venv-adk/bin/python -m pytest \\
        -p framework_tests.adk_plugin -c framework_tests/pytest.ini var/adk-tests/test_session_service.py
"""

import sys
from typing import Any

import pytest
from contextstore_client.adapters.adk import make_test_service

STALE_WRITER_TESTS = {
    "test_append_event_to_stale_session",
    "test_append_event_concurrent_stale_sessions_reject_stale_writer",
}


@pytest.fixture(autouse=True)
def services_in_contextstore(monkeypatch: pytest.MonkeyPatch) -> Any:
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").endswith("test_session_service") and hasattr(
                module, "get_session_service"):
            monkeypatch.setattr(module, "get_session_service", lambda *args, **kwargs: make_test_service())
    yield


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    keep = [i for i in items
            if "session_service" in getattr(i, "fixturenames", ()) or i.originalname in STALE_WRITER_TESTS]
    config.hook.pytest_deselected(items=[i for i in items if i not in keep])
    items[:] = keep
