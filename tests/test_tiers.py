"""The test tree marks its own tiers (tests/conftest.py): `make check` leaves out what they name,
and does not even import a module or folder that it leaves out whole."""

from types import SimpleNamespace

from tests.conftest import TESTS, pytest_collection_modifyitems, pytest_ignore_collect


class Item(SimpleNamespace):
    def add_marker(self, mark: str) -> None:
        self.marks.append(mark)


def tiers(path: str, *fixtures: str) -> list[str]:
    item = Item(path=TESTS / path, fixturenames=["db", *fixtures], marks=[])
    pytest_collection_modifyitems(None, [item])
    return item.marks


def ignored(path: str, markexpr: str) -> bool:
    config = SimpleNamespace(getoption=lambda name: {"markexpr": markexpr}[name])
    return bool(pytest_ignore_collect(TESTS / path, config))


def test_folders_and_fixtures_mark_the_tiers_without_anyone_remembering_a_mark():
    assert tiers("services/test_events.py") == []
    assert tiers("browser/test_new_page.py", "page", "live_server") == ["browser", "slow"]
    assert tiers("worker/test_celery_worker.py", "make_worker") == ["worker"]
    assert tiers("frameworks/test_framework_suites.py") == ["framework"]
    assert tiers("mcp/test_mcp_server.py") == ["mcp"]
    assert tiers("api/test_new_endpoint.py", "live_server") == ["slow"]
    assert tiers("views/test_jobs.py", "make_fs_worker") == ["worker"]
    assert tiers("test_migration_new_field.py") == tiers("test_schemathesis.py") == ["slow"]


def test_what_the_mark_expression_leaves_out_whole_is_not_collected():
    fast = "not (browser or worker or framework or slow)"
    assert ignored("browser", fast) and ignored("test_fuzz.py", fast)
    assert ignored("adapters/test_nooa.py", fast)
    assert not ignored("adapters/test_peteos_service.py", fast)  # fast and slow tests side by side
    assert not ignored("services", fast) and not ignored("browser", "browser")
    assert not ignored("test_fuzz.py", "") and not ignored("test_fuzz.py", "slow or postgres")
    assert ignored("frameworks", "not (browser or framework)")
