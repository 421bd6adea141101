import hashlib
import secrets
import time
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from contextstore.errors import NotAuthenticated
from contextstore.models import ApiToken, Membership, Workspace
from contextstore.redaction import use_workspace
from contextstore.services.common import Actor, audit
from contextstore.services.sessions import session_delete

TOKEN_PREFIX = "cs_"
LAST_USED_PRECISION = timedelta(minutes=1)

# Tokens already checked by this process, by hash: (token, monotonic expiry). Every API request
# authenticates, and the lookup was a round trip of its own. The bound on revocation: the
# revoking process forgets the token at once (api_token_revoke, workspace_delete); any other
# process refuses it at most TOKEN_CACHE_SECONDS later, when its entry expires.
_token_cache: dict[str, tuple[ApiToken, float]] = {}
TOKEN_CACHE_MAX = 10_000


def token_cache_clear(token_hash: str | None = None) -> None:
    """Forget one cached token (or all): the next request reads it from the database."""
    if token_hash is None:
        _token_cache.clear()
    else:
        _token_cache.pop(token_hash, None)


def workspace_ensure(*, slug: str, name: str = "") -> tuple[Workspace, bool]:
    """The workspace of `slug` (workspacespec.check_slug's, the door's), made when missing."""
    try:
        with transaction.atomic():
            return Workspace.objects.get_or_create(slug=slug, defaults={"name": name or slug})
    except IntegrityError:
        return Workspace.objects.get(slug=slug), False


def membership_set(*, workspace: Workspace, user: User, role: str, actor: Actor) -> Membership:
    """Give `user` a role (one of Membership.Role: the admin's form and the sign-on's role map
    check it) in `workspace`."""
    with transaction.atomic():
        membership, _ = Membership.objects.update_or_create(
            workspace=workspace, user=user, defaults={"role": role}
        )
        audit(actor=actor, action="membership.set", target=membership, workspace=workspace,
              user=user.get_username(), role=role)
    return membership


def _hash(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def api_token_create(
    *, workspace: Workspace, name: str = "", scope: str = ApiToken.Scope.WRITE, actor: Actor,
    created_by: User | None = None,
) -> tuple[ApiToken, str]:
    """Create a token; the raw value is returned once and only its hash is stored. `scope` is
    one of ApiToken.Scope, which each door checks (the admin's form by the field's choices,
    create_api_token's --scope by its choices)."""
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        token = ApiToken.objects.create(
            workspace=workspace, name=name[:100], prefix=raw[:12], token_hash=_hash(raw),
            scope=scope, created_by=created_by,
        )
        audit(actor=actor, action="token.create", target=token, workspace=workspace,
              name=token.name, scope=scope, prefix=token.prefix)
    return token, raw


def api_token_revoke(*, token: ApiToken, actor: Actor) -> ApiToken:
    with transaction.atomic():
        if token.revoked_at is None:
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])
            token_cache_clear(token.token_hash)
            audit(actor=actor, action="token.revoke", target=token, workspace=token.workspace,
                  prefix=token.prefix)
    return token


def api_token_of_header(authorization: str) -> ApiToken | None:
    """The active token an `Authorization: Bearer <token>` header names: the one parser of the
    header, for the REST API's authentication and the OTLP receivers. None when the request
    carries no bearer credentials (no header, another scheme); NotAuthenticated for a malformed
    header or a token that is unknown or revoked."""
    parts = authorization.split()
    if not parts or parts[0].lower() != "bearer":
        return None
    if len(parts) != 2:
        raise NotAuthenticated("The Authorization header must be 'Bearer <token>'.")
    token = api_token_authenticate(parts[1])
    if token is None:
        raise NotAuthenticated("Invalid or revoked API token.")
    return token


def api_token_authenticate(raw: str) -> ApiToken | None:
    """The active token for a raw value, or None. last_used_at is written at most once a minute."""
    if not raw.startswith(TOKEN_PREFIX):
        return None
    token_hash = _hash(raw)
    cached = _token_cache.get(token_hash)
    token: ApiToken | None
    if cached is not None and cached[1] > time.monotonic():
        token = cached[0]
    else:
        token = (
            ApiToken.objects.select_related("workspace")
            .filter(token_hash=token_hash, revoked_at__isnull=True)
            .first()
        )
        if token is None:
            token_cache_clear(token_hash)
            return None
        ttl = float(settings.CONTEXTSTORE["TOKEN_CACHE_SECONDS"])
        if ttl > 0:
            if len(_token_cache) >= TOKEN_CACHE_MAX:  # many tokens: start over, never grow
                _token_cache.clear()
            _token_cache[token_hash] = (token, time.monotonic() + ttl)
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_PRECISION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    use_workspace(token.workspace)  # what this request stores is redacted by its rules
    return token


def membership_remove(*, membership: Membership, actor: Actor) -> None:
    """Take a person out of a workspace (from admin); audited like every access change."""
    with transaction.atomic():
        audit(actor=actor, action="membership.remove", target=membership,
              workspace=membership.workspace, user=membership.user.get_username(),
              role=membership.role)
        membership.delete()


def workspace_update(*, workspace: Workspace, name: str, actor: Actor) -> Workspace:
    """Rename (1 to 200 characters: the admin's form, the model field's rules)."""
    with transaction.atomic():
        workspace.name = name
        workspace.save(update_fields=["name"])
        audit(actor=actor, action="workspace.update", target=workspace, workspace=workspace, name=name)
    return workspace


def workspace_redaction_set(*, workspace: Workspace, redaction: Any, actor: Actor) -> Workspace:
    """Set a workspace's secret redaction: {"enabled": bool, "extra_patterns": [{"name",
    "pattern"}]}. Every pattern is compiled and checked (no nested repetition, no
    backreference, no empty match) before anything is saved. API tokens cached by this process
    carry their workspace, so they are forgotten: its next append uses the new rules (other
    processes within TOKEN_CACHE_SECONDS). The setting is one redaction.setting_problems
    finds nothing wrong with (the admin's form checks it)."""
    value = {"enabled": redaction.get("enabled", True),
             "extra_patterns": list(redaction.get("extra_patterns", []))}
    with transaction.atomic():
        workspace.redaction = value
        workspace.save(update_fields=["redaction"])
        audit(actor=actor, action="workspace.redaction", target=workspace, workspace=workspace,
              enabled=value["enabled"], patterns=[p["name"] for p in value["extra_patterns"]])
    token_cache_clear()
    return workspace


def workspace_delete(*, workspace: Workspace, actor: Actor) -> None:
    """Hard delete of a tenant and everything in it, audited (the record outlives it)."""
    with transaction.atomic():
        for session in workspace.sessions.all():
            session_delete(session=session, actor=actor)
        audit(actor=actor, action="workspace.delete", target=workspace, workspace=None,
              slug=workspace.slug)
        workspace.delete()
        token_cache_clear()  # its tokens are gone with it


def memberships_sync(*, user: User, grants: dict[str, str], managed: set[str],
                     actor: Actor) -> list[Membership]:
    """Make `user`'s memberships of the `managed` workspaces exactly `grants` (slug -> role).

    Single sign-on calls this at every login: a role the identity provider's groups grant is
    set, one they no longer grant is taken away. Workspaces outside `managed` (not named by the
    role map) are left alone, so memberships granted by hand there stay; a workspace the map
    names that does not exist is skipped (sign-on makes none). Each change is audited
    (membership.set / membership.remove); an unchanged membership writes nothing.
    """
    changed = []
    with transaction.atomic():
        current = {m.workspace.slug: m for m in
                   Membership.objects.filter(user=user, workspace__slug__in=managed)
                   .select_related("workspace", "user")}
        for slug, membership in current.items():
            if slug not in grants:
                membership_remove(membership=membership, actor=actor)
        for slug, role in sorted(grants.items()):
            if slug not in managed:
                continue
            if slug in current and current[slug].role == role:
                continue
            workspace = Workspace.objects.filter(slug=slug).first()
            if workspace is None:  # named by the map, not made yet: nothing to join
                continue
            changed.append(membership_set(workspace=workspace, user=user, role=role, actor=actor))
    return changed
