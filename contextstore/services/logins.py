"""Password logins throttled (django-axes): per username and per client address, with a
cool-off that doubles as failures go on, and every lockout kept in the audit log.

django-axes counts failed password logins (its AccessAttempt rows, on the primary: see
db_router.PRIMARY_ONLY_APPS) for the dashboard's and the admin's login forms alike: both
authenticate through Django's backends, where AxesStandaloneBackend refuses a locked-out
username or address before the password is checked. Single sign-on (mozilla-django-oidc)
sends no password, so it is neither counted nor refused (not_a_password_login).

The settings (project/settings.py): LOGIN_FAILURE_LIMIT failures lock a username, or an
address, out for LOGIN_COOLOFF_MINUTES; every further LOGIN_FAILURE_LIMIT failures (an attempt
while locked out counts, and restarts the wait) double the wait, up to a day.
"""

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Sum
from django.http import HttpRequest

from contextstore.models import AuditLog

MAX_COOLOFF = timedelta(days=1)


def client_ip(request: HttpRequest) -> str | None:
    """The address a login counts against: the one every audit row names (REMOTE_ADDR; a proxy
    in front sets it, and a client-sent X-Forwarded-For is never believed)."""
    return request.META.get("REMOTE_ADDR")


def not_a_password_login(request: HttpRequest, credentials: dict[str, Any] | None) -> bool:
    """axes' whitelist: an authentication that carries no password (single sign-on's callback)
    is not throttled."""
    return not (credentials or {}).get("password")


def _failures(request: HttpRequest) -> int:
    """Failures recorded lately for this request's address, or its username, whichever has
    more (as axes counts them: summed over its rows of each)."""
    from axes.models import AccessAttempt  # an app model: imported once the apps are ready

    counts = [AccessAttempt.objects.filter(ip_address=client_ip(request))]
    username = request.POST.get("username") if request.method == "POST" else None
    if username:
        counts.append(AccessAttempt.objects.filter(username=username))
    return max(rows.aggregate(n=Sum("failures_since_start"))["n"] or 0 for rows in counts)


def cooloff(request: HttpRequest | None = None) -> timedelta:
    """How long a lockout lasts: LOGIN_COOLOFF_MINUTES, doubled for every further
    LOGIN_FAILURE_LIMIT failures past the first lockout, at most a day. axes also keeps a
    failure counted for this long, so the counts that make the wait grow outlive it."""
    base = timedelta(minutes=settings.LOGIN_COOLOFF_MINUTES)
    if request is None:
        return base
    failures = getattr(request, "axes_failures_since_start", None)
    if failures is None:
        failures = _failures(request)
    steps = max(0, failures // settings.LOGIN_FAILURE_LIMIT - 1)
    return min(base * 2 ** min(steps, 20), MAX_COOLOFF)


def login_locked_out(*, request: HttpRequest | None, username: str | None, ip_address: str | None,
                     **_: Any) -> None:
    """Audit a lockout (axes' user_locked_out signal). axes signals it on every failure past the
    limit; one row is kept each time the wait grows (every LOGIN_FAILURE_LIMIT failures), so an
    attack leaves a bounded trail: who, from where, how many failures, for how long."""
    failures = getattr(request, "axes_failures_since_start", None) if request is not None else None
    if failures is None or failures % settings.LOGIN_FAILURE_LIMIT:
        return
    wait = cooloff(request)
    path = request.path if request is not None else ""
    AuditLog.objects.create(
        workspace=None, actor_type=AuditLog.ActorType.SYSTEM, actor_label="login throttle",
        action="login.locked_out", target_type="login", target_id=(username or "")[:64],
        ip=ip_address, details={"username": username or "", "ip": ip_address or "",
                                "failures": failures, "cooloff_seconds": int(wait.total_seconds()),
                                "path": path})
