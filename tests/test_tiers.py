"""The test tree marks its own tiers (tests/conftest.py): `make check` leaves out what they name,
and does not even import a module or folder that it leaves out whole."""

from types import SimpleNamespace

from tests.conftest import TESTS, pytest_collection_modifyitems, pytest_ignore_collect


class Item(SimpleNamespace):
    def add_marker(self, mark: str) -> None:
        self.marks.append(mark)

    def get_closest_marker(self, name: str) -> str | None:
        return name if name in self.marked else None


def tiers(path: str, *fixtures: str, database: str | None = "db", marked: tuple[str, ...] = ()) -> list[str]:
    item = Item(path=TESTS / path, fixturenames=[*filter(None, [database]), *fixtures], marks=[],
                marked=marked)
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
    assert tiers("test_fuzz.py") == tiers("test_schemathesis.py") == ["slow"]


def test_a_test_that_cannot_reach_the_database_is_nodb():
    assert tiers("test_prompt_cache.py", database=None) == ["nodb"]
    assert tiers("test_deploy.py", "tmp_path", database=None) == ["nodb", "slow"]
    assert tiers("test_deploy.py", database="transactional_db") == ["slow"]
    assert tiers("api/test_x.py", database="live_server") == ["slow"]
    assert tiers("services/test_x.py", database=None, marked=("django_db",)) == []


def test_what_the_mark_expression_leaves_out_whole_is_not_collected():
    fast = "not (browser or worker or framework or slow)"
    assert ignored("browser", fast) and ignored("test_fuzz.py", fast)
    assert ignored("adapters/test_nooa.py", fast)
    assert not ignored("adapters/test_peteos_service.py", fast)  # fast and slow tests side by side
    # a module named with its folder is that one only, not its namesakes elsewhere
    assert ignored("adapters/test_any_text.py", fast) and not ignored("api/test_any_text.py", fast)
    assert ignored("mcp/test_openai_agents_host.py", fast)
    assert not ignored("services", fast) and not ignored("browser", "browser")
    assert not ignored("test_fuzz.py", "") and not ignored("test_fuzz.py", "slow or postgres")
    assert ignored("frameworks", "not (browser or framework)")
    # a module's tests may get marks besides its path's: it is kept when one could match
    assert not ignored("test_deploy.py", "nodb") and not ignored("browser", "slow")
    assert ignored("browser", "not (browser or framework or mcp or nodb)")
    assert not ignored("test_deploy.py", "not (browser or framework or mcp or nodb)")
