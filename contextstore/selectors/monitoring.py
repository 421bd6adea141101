"""Reads of saved views and alerts (models/monitoring.py)."""

from datetime import datetime

from django.contrib.auth.models import User
from django.db.models import Q, QuerySet

from contextstore.models import AlertEvent, AlertRule, CallCacheVerdict, SavedView, Session, Workspace


def saved_views_visible(*, workspace: Workspace, user: User | None,
                        page: str | None = None) -> QuerySet[SavedView]:
    """The views a person sees: their own and those shared with the workspace (`user` None: the
    shared ones only, as an API token of no person sees them)."""
    mine = Q(owner=user) if user is not None else Q(pk__in=[])
    views = SavedView.objects.filter(Q(shared=True) | mine, workspace=workspace).select_related("owner")
    return views.filter(page=page) if page else views


def saved_view_default(*, workspace: Workspace, user: User, page: str) -> SavedView | None:
    return SavedView.objects.filter(workspace=workspace, owner=user, page=page, is_default=True).first()


def firing_rules(*, workspace: Workspace) -> QuerySet[AlertRule]:
    return AlertRule.objects.filter(workspace=workspace, state=AlertRule.State.FIRING, enabled=True)


def alert_events(*, workspace: Workspace) -> QuerySet[AlertEvent]:
    return AlertEvent.objects.filter(workspace=workspace).select_related("rule")


def cache_breaks_in_window(*, workspace: Workspace, since: datetime, until: datetime, agent: str = "",
                           model: str = "", sessions: QuerySet[Session] | None = None) -> int:
    """The calls in [since, until) whose prompt cache the worker found lost or partly lost
    (CallCacheVerdict; calls not compared yet are not counted)."""
    verdicts = CallCacheVerdict.objects.filter(
        workspace=workspace, status__in=(CallCacheVerdict.Status.LOST, CallCacheVerdict.Status.PARTIAL),
        call__occurred_at__gte=since, call__occurred_at__lt=until)
    if agent:
        verdicts = verdicts.filter(session__agent=agent)
    if model:
        verdicts = verdicts.filter(call__figure__model=model)
    if sessions is not None:
        verdicts = verdicts.filter(session__in=sessions.values("pk"))
    return verdicts.count()
