"""Single sign-on's role map: parsing, the groups -> roles mapping, the membership sync and the
system check that refuses a bad map at start."""

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from contextstore.errors import InvalidInput
from contextstore.models import AuditLog, Membership
from contextstore.services.sso import grants_for_groups, managed_workspaces, role_map_parse
from contextstore.services.workspaces import memberships_sync, workspace_ensure

MAP = {"ml": {"acme": "editor"}, "ops": {"acme": "admin", "rival": "viewer"}, "guests": {"acme": "viewer"}}


@pytest.mark.parametrize("raw, problem", [
    ("{not json", "not JSON"),
    ("[]", "JSON object"),
    ('{"ml": "acme"}', "object of workspace slug to role"),
    ('{"ml": {}}', "object of workspace slug to role"),
    ('{"ml": {"acme": "owner"}}', "'owner'; a role is one of viewer, editor, admin"),
])
def test_a_bad_role_map_says_what_is_wrong(raw, problem):
    with pytest.raises(InvalidInput, match=problem):
        role_map_parse(raw)


def test_role_map_parses_and_empty_is_no_map():
    assert role_map_parse("") == {}
    assert role_map_parse('{"ml": {"acme": "editor"}}') == {"ml": {"acme": "editor"}}
    assert managed_workspaces(MAP) == {"acme", "rival"}


def test_the_strongest_role_any_group_grants_wins():
    assert grants_for_groups(["guests", "ml"], MAP) == {"acme": "editor"}
    assert grants_for_groups(["ml", "ops"], MAP) == {"acme": "admin", "rival": "viewer"}
    assert grants_for_groups("ml", MAP) == {"acme": "editor"}  # a single group as a string
    assert grants_for_groups(["marketing"], MAP) == {}
    assert grants_for_groups(None, MAP) == {}
    assert grants_for_groups({"ml": 1}, MAP) == {}
    assert grants_for_groups([3, None], MAP) == {}


@pytest.mark.django_db
def test_sync_adds_changes_and_removes_only_in_managed_workspaces(user, actor):
    acme = workspace_ensure(slug="acme")[0]
    rival = workspace_ensure(slug="rival")[0]
    by_hand = workspace_ensure(slug="handmade")[0]
    Membership.objects.create(workspace=by_hand, user=user, role="admin")
    managed = managed_workspaces(MAP)

    memberships_sync(user=user, grants={"acme": "editor", "rival": "viewer", "nowhere": "admin"},
                     managed=managed | {"nowhere"}, actor=actor)
    roles = dict(Membership.objects.filter(user=user).values_list("workspace__slug", "role"))
    assert roles == {"acme": "editor", "rival": "viewer", "handmade": "admin"}  # no "nowhere" made

    audits = AuditLog.objects.count()
    memberships_sync(user=user, grants={"acme": "editor", "rival": "viewer"}, managed=managed,
                     actor=actor)
    assert AuditLog.objects.count() == audits  # nothing changed, nothing written

    memberships_sync(user=user, grants={"acme": "admin"}, managed=managed, actor=actor)
    roles = dict(Membership.objects.filter(user=user).values_list("workspace__slug", "role"))
    assert roles == {"acme": "admin", "handmade": "admin"}
    actions = list(AuditLog.objects.order_by("-id").values_list("action", flat=True)[:2])
    assert sorted(actions) == ["membership.remove", "membership.set"]
    assert Membership.objects.get(workspace=acme, user=user).role == "admin"
    assert not Membership.objects.filter(workspace=rival, user=user).exists()


def test_a_bad_role_map_stops_the_system_check(settings, db):
    settings.OIDC_ROLE_MAP = '{"ml": {"acme": "superuser"}}'
    with pytest.raises(SystemCheckError, match="contextstore.E101"):
        call_command("check")


def test_sso_without_its_endpoints_stops_the_system_check(settings, db):
    settings.OIDC_ENABLED, settings.OIDC_RP_CLIENT_ID = True, "dashboard"
    settings.OIDC_RP_CLIENT_SECRET = "s3cret"
    with pytest.raises(SystemCheckError, match="OIDC_OP_AUTHORIZATION_ENDPOINT"):
        call_command("check")


def test_local_passwords_off_without_sso_stops_the_system_check(settings, db):
    settings.LOCAL_PASSWORDS = False
    with pytest.raises(SystemCheckError, match="contextstore.E103"):
        call_command("check")


def test_a_good_configuration_passes_the_check(settings, db):
    settings.OIDC_ROLE_MAP = '{"ml": {"acme": "editor"}}'
    call_command("check")
