"""The test tree marks its own tiers (tests/conftest.py): `make check` leaves out what they name."""

from types import SimpleNamespace

from tests.conftest import TESTS, pytest_collection_modifyitems


class Item(SimpleNamespace):
    def add_marker(self, mark: str) -> None:
        self.marks.append(mark)


def tiers(path: str, *fixtures: str) -> list[str]:
    item = Item(path=TESTS / path, fixturenames=["db", *fixtures], marks=[])
    pytest_collection_modifyitems(None, [item])
    return item.marks


def test_folders_and_fixtures_mark_the_tiers_without_anyone_remembering_a_mark():
    assert tiers("services/test_events.py") == []
    assert tiers("browser/test_new_page.py", "page", "live_server") == ["browser", "slow"]
    assert tiers("worker/test_celery_worker.py", "make_worker") == ["worker"]
    assert tiers("frameworks/test_framework_suites.py") == ["framework"]
    assert tiers("api/test_new_endpoint.py", "live_server") == ["slow"]
    assert tiers("views/test_jobs.py", "make_fs_worker") == ["worker"]
    assert tiers("test_migration_new_field.py") == tiers("test_schemathesis.py") == ["slow"]
