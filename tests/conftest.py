import itertools
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from _pytest.mark.expression import Expression  # what -m parses (pytest has no public name)
from django.contrib.auth import get_user_model
from hypothesis import HealthCheck, settings

from contextstore.redaction import scope_reset
from contextstore.services.access_log import forget_seen
from contextstore.services.common import Actor
from contextstore.services.sessions import session_ensure, thread_ensure
from contextstore.services.workspaces import api_token_create, workspace_ensure
from tests.fake_chat import fake_chat

# Hypothesis: `dev` (the everyday loop) draws few examples, `ci` (.ci/run sets CI) the full
# numbers. HYPOTHESIS_PROFILE picks one by hand. Property tests over the database use
# function-scoped fixtures on purpose: each example rolls back inside the test's transaction.
_common = {"deadline": None, "suppress_health_check": [HealthCheck.function_scoped_fixture]}
settings.register_profile("ci", max_examples=60, **_common)
settings.register_profile("dev", max_examples=12, **_common)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))

# Tiers, applied by the tree itself so that no one has to remember a mark: the folders
# tests/browser, tests/worker and tests/frameworks mark their tests; a test that starts a live
# server or a worker is `slow` wherever it lives. `make check` runs what is left.
TESTS = Path(__file__).resolve().parent
FOLDER_MARKS = {"browser": "browser", "worker": "worker", "frameworks": "framework", "mcp": "mcp"}
FIXTURE_MARKS = {"live_server": "slow", "make_worker": "worker", "make_fs_worker": "worker"}
# A test that asks for none of these cannot reach the database (pytest-django blocks it), so it
# behaves the same on either one: it is `nodb`, and CI's SQLite pass leaves it to the PostgreSQL
# pass (deploy files, packaging, documentation, the pure modules).
DATABASE_FIXTURES = {"db", "transactional_db", "live_server", "django_db_reset_sequences",
                     "django_db_serialized_rollback"}
# Modules whose every test is slow: schema fuzzing, deploy checks that start gunicorn, celery or
# manage.py as processes, and the adapters' tests that drive a framework against a live server
# (a fast test belongs in another module).
SLOW_MODULES = ("test_schemathesis.py", "test_fuzz.py", "test_deploy.py",
                "test_production_layout.py", "test_nooa.py", "test_agent_framework.py",
                "test_agentscope.py", "test_peteos_adapter.py", "test_demo_frameworks.py",
                # every test of these starts a live server or a process (slow by its fixtures),
                # and importing them costs each worker of `make check` seconds of CPU: the
                # OpenAI Agents SDK alone 5 s, clientai and agentscope 2 s
                "test_openai_agents_host.py", "adapters/test_any_text.py", "adapters/test_redaction.py",
                "test_real_emitters.py", "test_mcp_distribution.py", "test_client_distribution.py",
                "test_bench_client.py", "test_outage_restart.py", "test_two_nodes.py")


# The tests that take a minute or more alone (the frameworks' suites, the peers' benchmark, the
# soak, the 50k walkthrough, the processes and clusters some tests start), heaviest first: they go
# to the front of the run, so that two workers share them from the start and neither spends the
# last minutes alone on one while the other has nothing left (pytest-xdist hands tests out in
# collection order). Measured with --durations on PostgreSQL.
HEAVY_FIRST = ("frameworks/test_framework_suites.py", "frameworks/test_bench_peers.py",
               "worker/test_soak_embedded.py", "browser/test_large_thread_walkthrough.py",
               "test_outage_restart.py", "test_client_distribution.py",
               "frameworks/test_framework_demos.py", "test_replicas.py", "test_production_layout.py",
               "api/test_bench_command.py", "frameworks/test_otlp_emitters.py",
               "frameworks/test_framework_conversations.py", "frameworks/test_adk_memory_service.py",
               "adapters/test_anthropic_memory.py", "test_deploy.py")


def heavy_rank(path: Path) -> int:
    name = "/".join(path.relative_to(TESTS).parts) if path.is_relative_to(TESTS) else ""
    return HEAVY_FIRST.index(name) if name in HEAVY_FIRST else len(HEAVY_FIRST)


def path_tiers(path: Path) -> set[str]:
    """The marks every test under `path` gets whatever it uses."""
    parts = path.relative_to(TESTS).parts
    marks = {FOLDER_MARKS[parts[0]]} if parts and parts[0] in FOLDER_MARKS else set()
    # a name with a folder ("adapters/test_any_text.py") is that module only, not its namesakes
    if path.name.startswith(SLOW_MODULES) or "/".join(parts) in SLOW_MODULES:
        marks.add("slow")
    return marks


def pytest_ignore_collect(collection_path, config):
    """Don't even import what the -m expression leaves out whole: collecting the schema fuzzers
    builds their cases and the Nooa tests import litellm, 40 s of CPU that `make check` skips.
    Left out whole means false whatever marks its tests get besides the folder's and module's
    (a `slow` module still holds `nodb` tests and tests that are not)."""
    markexpr = config.getoption("markexpr")
    if not markexpr or not collection_path.is_relative_to(TESTS):
        return None
    marks = path_tiers(collection_path)
    if not marks:
        return None
    expression = Expression.compile(markexpr)
    free = sorted(set(re.findall(r"[\w.\-\[\]]+", markexpr)) - {"and", "or", "not"} - marks)
    for chosen in itertools.product((False, True), repeat=len(free)):
        present = marks | {name for name, on in zip(free, chosen, strict=True) if on}
        if expression.evaluate(present.__contains__):
            return None
    return True


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: heavy_rank(item.path))  # stable: the rest keep their order
    for item in items:
        marks = path_tiers(item.path) | {FIXTURE_MARKS.get(name) for name in item.fixturenames}
        if not DATABASE_FIXTURES & set(item.fixturenames) and not item.get_closest_marker("django_db"):
            marks.add("nodb")
        for mark in sorted(filter(None, marks)):
            item.add_marker(mark)


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """PBKDF2 costs about a second per user; no test here is about hashing strength."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def fresh_read_audit_memory():
    """The read audit's per-process memory of rows written (services/access_log) is emptied
    for every test: a rolled-back test's ids come back in the next one (SQLite)."""
    forget_seen()
    yield
    forget_seen()


@pytest.fixture(autouse=True)
def no_redaction_workspace_named():
    """Each test starts as a request or a task does: no workspace's redaction rules named
    (contextstore.redaction.use_workspace), so none leaks from the test before."""
    scope_reset()
    yield
    scope_reset()


@pytest.fixture
def endpoint(settings):
    """The deployment's chat-completions endpoint (replays, experiments, judges): a local fake
    (tests/fake_chat.py) that answers, fails or stalls on demand, with a global key."""
    with fake_chat() as server:
        settings.PLAYGROUND_BASE_URL = server.base_url
        settings.PLAYGROUND_API_KEY = "sk-fake"
        settings.PLAYGROUND_TIMEOUT = 10
        yield server


@pytest.fixture
def eager_tasks(settings):
    """Celery tasks run in this process when sent (the outbox hands them over inline). Celery's
    own config is read once per process, so it is set too, not only Django's setting: whether a
    test ran eagerly must not depend on which test first touched the app."""
    from project.celery import app

    saved = app.conf.task_always_eager, app.conf.task_eager_propagates
    settings.CELERY_TASK_ALWAYS_EAGER = True
    app.conf.task_always_eager = app.conf.task_eager_propagates = True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = saved


@pytest.fixture
def actor() -> Actor:
    return Actor.system("tests")


@pytest.fixture
def workspace(db):
    return workspace_ensure(slug="acme", name="Acme")[0]


@pytest.fixture
def other_workspace(db):
    return workspace_ensure(slug="rival", name="Rival")[0]


@pytest.fixture
def session(workspace, actor):
    return session_ensure(workspace=workspace, key="s-1", user_id="alice", agent="helper",
                          actor=actor)[0]


@pytest.fixture
def thread(session, actor):
    return thread_ensure(session=session, actor=actor)[0]


@pytest.fixture
def token(workspace, actor):
    """(ApiToken, raw value) with write scope."""
    return api_token_create(workspace=workspace, name="tests", scope="write", actor=actor)


@pytest.fixture
def read_token(workspace, actor):
    return api_token_create(workspace=workspace, name="reader", scope="read", actor=actor)


@pytest.fixture
def user(db):
    return get_user_model().objects.create_user("pat", password="pw-for-tests-123")


def messages(n: int, *, start: int = 0, words: int = 60, **extra) -> list[dict]:
    """n realistic Message events (about `words` words each)."""
    body = " ".join(["context"] * (words - 4))
    return [
        {"type": "Message", "role": "user" if i % 2 == 0 else "assistant",
         "content": f"turn {start + i}: {body}", **extra}
        for i in range(n)
    ]


def response_json(response) -> Any:
    """The JSON body of a response, streamed (the exports) or not."""
    raw = b"".join(response.streaming_content) if response.streaming else response.content
    return json.loads(raw)
