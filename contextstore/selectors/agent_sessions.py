"""Reads behind framework sessions (services/agent_sessions.py owns their writes)."""

from typing import Any

from django.db.models import Q

from contextstore.errors import InvalidInput
from contextstore.models import Event, ScopedState, Thread, Workspace


def scoped_states(*, workspace: Workspace, app: str, user_id: str) -> dict[str, ScopedState | None]:
    rows = ScopedState.objects.filter(
        Q(scope=ScopedState.Scope.APP, user_id="") | Q(scope=ScopedState.Scope.USER, user_id=user_id),
        workspace=workspace, app=app,
    )
    found: dict[str, ScopedState | None] = {"app": None, "user": None}
    for row in rows:
        found[row.scope] = row
    return found


def scopes_for_users(*, workspace: Workspace, app: str, user_ids: set[str]) -> tuple[dict, dict[str, dict]]:
    """The app scope's state and the user scopes' states of the given users, in one query."""
    rows = ScopedState.objects.filter(
        Q(scope=ScopedState.Scope.APP, user_id="") | Q(scope=ScopedState.Scope.USER, user_id__in=user_ids),
        workspace=workspace, app=app)
    app_state: dict = {}
    users: dict[str, dict] = {}
    for row in rows:
        if row.scope == ScopedState.Scope.APP:
            app_state = row.state
        else:
            users[row.user_id] = row.state
    return app_state, users


def history_events(*, thread: Thread) -> Any:
    """The framework's own history: appended events not retracted, cleared or collapsed."""
    return Event.objects.filter(thread=thread, status=Event.Status.ACTIVE).select_related("run")


def data_contains_q(contains: dict[str, Any]) -> Q:
    """JSON containment on `data` that behaves the same on PostgreSQL and SQLite: every leaf
    of the given object must equal the event's value at the same path. Applies to a queryset
    annotated with `data_json` (data is stored as text, see fields.OrderedJSONField)."""
    q = Q()

    def walk(prefix: list[str], value: Any) -> None:
        nonlocal q
        if isinstance(value, dict) and value:
            for key, sub in value.items():
                if not key or "__" in key or not key.replace("_", "a").replace("-", "a").isalnum():
                    raise InvalidInput("data_contains keys must be plain names.",
                                       details={"data_contains": key})
                walk([*prefix, key], sub)
            return
        if not prefix:
            raise InvalidInput("data_contains must be a non-empty object.",
                               details={"data_contains": "object"})
        q &= Q(**{"data_json__" + "__".join(prefix): value})

    walk([], contains)
    return q
