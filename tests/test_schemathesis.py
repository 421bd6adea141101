"""Property-based API tests generated from the OpenAPI schema, on every operation: no 5xx, no
response that breaks the schema (status codes, content types, bodies, headers), every request
the schema calls valid accepted (issue 27) but for the documented refusals: 404 (an id or
identity that doesn't exist), 409 (a conflict with what is stored) and 412 (a stale revision);
and issue 11's rules (tests/fuzzing.py): refusals in the error shape naming the place, nothing
written by a refused request, and the fixture thread still reads afterwards. Stateful
sequences: tests/test_fuzz.py."""

import copy
import itertools
import json
import re
from typing import Any

import pytest
import schemathesis
from django.core.cache import cache
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig

from contextstore.models import Event
from contextstore.services.common import Actor
from contextstore.services.events import event_append
from contextstore.services.workspaces import api_token_create
from project.wsgi import application
from tests.conftest import messages
from tests.fuzzing import (  # noqa: F401 - in_process_app is an autouse fixture
    assert_thread_reads,
    check_answer,
    in_process_app,
    snapshot,
)

CHECKS = ["not_a_server_error", "status_code_conformance", "content_type_conformance",
          "response_schema_conformance", "response_headers_conformance", "positive_data_acceptance"]
DOCUMENTED_REFUSALS = ["404", "409", "412"]

# Served through the WSGI app (no database needed to build the schema).
schema = schemathesis.openapi.from_wsgi("/api/schema/", application, config=SchemathesisConfig.from_dict({
    "checks": {"enabled": False, **{name: {"enabled": True} for name in CHECKS},
               "positive_data_acceptance": {"enabled": True,
                                            "expected-statuses": ["2xx", *DOCUMENTED_REFUSALS]}},
    # The coverage phase enumerates the import document's every member and boundary (about
    # 1,900 requests, 80 s); its fuzzing phase keeps the budget every operation has.
    "operations": [{"include-path-regex": "^/api/v1/threads/import/$",
                    "phases": {"coverage": {"enabled": False}}}],
}))

# -- the rules between fields the schema states as x- extensions (contextstore/api/schema.py),
# taught to the generator: a "valid" case keeps them, as a client reading the schema would.

def _resolve(node: Any, root: Any = None) -> Any:
    """A schema with its $ref followed: within `root` (a body's resolved schema keeps what it
    refers to under x-bundled), else within the document; {} for any other."""
    while isinstance(node, dict) and "$ref" in node:
        path = node["$ref"].removeprefix("#/").split("/")
        node = root if isinstance(root, dict) and path[0] in root else schema.raw_schema
        for part in path:
            node = node.get(part, {}) if isinstance(node, dict) else {}
    return node


def _limit(expression: str, body: dict[str, Any], properties: dict[str, Any],
           root: Any) -> float | None:
    """x-at-most's "name", "name - n" or "name / n" (whole tokens, rounded down); an absent
    field counts as its default."""
    name, *rest = expression.split()
    value = body.get(name, _resolve(properties.get(name, {}), root).get("default"))
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None  # (a float bound: a score configuration's min_value <= max_value)
    if rest:
        operator, operand = rest[0], int(rest[1])
        return value - operand if operator == "-" else value // operand
    return value


def _objects(body: dict[str, Any], name: str) -> list[dict[str, Any]]:
    value = body.get(name)
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _unique_by(body: dict[str, Any], rules: dict[str, str]) -> None:
    """x-unique-by: no two objects of the list share a (non-null) value of the key."""
    for name, key in rules.items():
        if isinstance(body.get(name), list):
            seen: set[Any] = set()
            body[name] = [item for item in body[name] if not (
                isinstance(item, dict) and isinstance(item.get(key), str | int)
                and (item[key] in seen or seen.add(item[key])))]


def _numbered(body: dict[str, Any], rules: dict[str, str]) -> None:
    """x-numbered: the list's objects hold 1, 2, 3... in the key, and a position at or before
    it where no earlier one stands."""
    for name, key in rules.items():
        taken: set[int] = set()
        for number, item in enumerate(_objects(body, name), 1):
            item[key] = number
            position = item.get("position")
            if isinstance(position, int) and (position > number or position in taken):
                item["position"] = position = number
            taken.add(position if isinstance(position, int) else number)


def _summary_of(body: dict[str, Any], rules: dict[str, str]) -> None:
    """x-summary-of: each object names a Summary event of `events` by its seq (those that
    cannot, when there is none, are left out)."""
    summaries = [e["seq"] for e in _objects(body, "events") if e.get("type") == "Summary"]
    for name, key in rules.items():
        kept = _objects(body, name) if summaries else []
        for item in kept:
            value = item.get(key)
            item[key] = summaries[value % len(summaries) if isinstance(value, int) else 0]
        if name in body:
            body[name] = kept


def _keep_rules(body: Any, node: Any, root: Any) -> None:
    """Bring a generated body within the x- rules, here and in nested objects and lists."""
    node = _resolve(node, root)
    if isinstance(body, list) and isinstance(node, dict):
        for item in body:
            _keep_rules(item, node.get("items"), root)
        return
    if not isinstance(body, dict) or not isinstance(node, dict):
        return
    properties = node.get("properties", {})
    for name, expression in node.get("x-at-most", {}).items():
        limit = _limit(expression, body, properties, root)
        value = body.get(name)
        if limit is not None and isinstance(value, int | float) and not isinstance(value, bool) \
                and value > limit:
            body[name] = limit
    _unique_by(body, node.get("x-unique-by", {}))
    _numbered(body, node.get("x-numbered", {}))
    _summary_of(body, node.get("x-summary-of", {}))
    _unique_by(body, node.get("x-unique-by", {}))  # again: x-summary-of may repeat a seq
    for name, sub in properties.items():
        if name not in node.get("x-numbered", {}):  # (its objects' own rules are kept there)
            _keep_rules(body.get(name), sub, root)
    for branch in (*node.get("oneOf", ()), *node.get("anyOf", ()), *node.get("allOf", ())):
        _keep_rules(body, branch, root)  # the rules of a branch the body does not take never apply


# x-key-pattern is ECMA 262 in Unicode mode; Python's \w is its letters, digits and "_".
KEY = re.compile(_resolve({"$ref": "#/components/schemas/DataContains"})["x-key-pattern"]
                 .replace("\\p{L}\\p{N}_", "\\w"))


def _plain_keys(value: Any) -> Any:
    """A data_contains document with each key the schema's x-key-pattern refuses renamed."""
    if not isinstance(value, dict):
        return value
    return {(key if KEY.fullmatch(key) else f"k{i}"): _plain_keys(sub)
            for i, (key, sub) in enumerate(value.items())}


@schema.hook
def map_case(context, case):
    """Every case: one generated to break the schema elsewhere still does, and one labelled
    negative at generation can be sent as positive (schemathesis revalidates what it sends)."""
    for body in case.operation.body:
        if body.media_type == case.media_type and isinstance(case.body, dict):
            case.body = copy.deepcopy(case.body)  # (cases may share their generated parts)
            _keep_rules(case.body, body.resolved_schema, body.resolved_schema)
    if case.query and "data_contains" in case.query:
        value = case.query["data_contains"]  # a JSON document, as text once serialised
        case.query = {**case.query, "data_contains": json.dumps(_plain_keys(json.loads(value)))
                      if isinstance(value, str) else _plain_keys(value)}
    return case


# The fixture session as the agent-sessions endpoints address it (tests/conftest.py's session
# and thread: app "", user "alice", key "s-1", thread "main").
IDENTITY = {"app": "", "user_id": "alice", "key": "s-1", "thread": "main"}
TURNS = itertools.count()


def _point_at_fixtures(case, thread, session) -> None:
    """Point most generated ids and identities at real objects so the handlers run and answer
    in full, not only the 404 path; every fourth case keeps its drawn values. Deleting the
    fixture session is left to random ids so later cases still find it."""
    if next(TURNS) % 4 == 3:
        return
    params = case.path_parameters or {}
    if "thread_pk" in params:
        params["thread_pk"] = thread.pk
    if "id" in params and not (case.method == "DELETE" and "/sessions/" in case.path):
        if case.path.startswith("/api/v1/threads/"):
            params["id"] = thread.pk
        elif case.path.startswith("/api/v1/sessions/"):
            params["id"] = session.pk
    if case.path.startswith("/api/v1/agent-sessions/") and not case.path.endswith("/delete/"):
        for values in (case.query, case.body):
            if isinstance(values, dict):
                values.update({k: v for k, v in IDENTITY.items() if k in values})


def _within_the_thread(case, thread) -> None:
    """A collapse or fork of the fixture thread gets a range it holds, start not after end: the
    schema states the order (x-at-most) but cannot know which positions a thread holds, and a
    range outside them is refused (400). Each drawn end is taken to a held position."""
    action = case.path.rstrip("/").rsplit("/", 1)[-1]
    if (action not in ("collapse", "fork") or (case.path_parameters or {}).get("id") != thread.pk
            or not isinstance(case.body, dict)):
        return
    held = sorted(Event.objects.filter(thread=thread, status=Event.Status.ACTIVE)
                  .values_list("position", flat=True))
    start, end = (held[value % len(held)] if isinstance(value := case.body.get(name), int) and held
                  else None for name in ("start_position", "end_position"))
    if start is not None and end is not None and start > end:
        start, end = end, start
    for name, position in (("start_position", start), ("end_position", end)):
        if position is not None:
            case.body[name] = position


@schema.parametrize()
@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_the_api_honours_its_schema(case, db, admin_token, session, thread, client):
    token = admin_token
    cache.clear()
    if not thread.last_seq:  # a history to collapse, fork, window and read
        event_append(thread=thread, events=messages(3, words=8), actor=Actor.system("tests"))
        thread.last_seq = 3
    _point_at_fixtures(case, thread, session)
    _within_the_thread(case, thread)
    raw = token[1]
    if case.path == "/api/v1/erasures/":  # needs admin scope; the fixture token writes
        raw = api_token_create(workspace=token[0].workspace, name="dpo", scope="admin",
                               actor=Actor.system("tests"))[1]
    before = snapshot()
    response = case.call(headers={"Authorization": f"Bearer {raw}"})

    case.validate_response(response)  # the checks the config enables for this operation
    check_answer(response, case, before)
    # Only an accepted write can break the fixture thread (a refusal wrote nothing, a read
    # writes nothing); deleting the fixture session (and thread) is allowed.
    if case.method in ("POST", "PUT", "PATCH") and response.status_code < 400:
        assert_thread_reads(client, token[1], thread.pk, reads=("context/",))


@pytest.fixture
def admin_token(workspace, actor, user):
    """Admin scope: write, and the workspace's own settings (its retention policy) and legal
    holds, so every operation's valid requests are accepted; made by a person, as admin makes
    tokens (a saved view needs one)."""
    return api_token_create(workspace=workspace, name="tests", scope="admin", actor=actor, created_by=user)


def test_every_operation_runs_the_acceptance_and_conformance_checks():
    """An operation's or a check's own config entry can replace the one that enables a check
    (positive_data_acceptance once never ran for that reason)."""
    for result in schema.get_all_operations():
        operation = result.ok()
        for phase in ("coverage", "fuzzing"):
            config = schema.config.checks_config_for(operation=operation, phase=phase)
            assert config.positive_data_acceptance.enabled, operation.label
            assert config.response_schema_conformance.enabled, operation.label
