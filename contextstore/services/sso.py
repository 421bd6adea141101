"""Single sign-on: which workspaces and roles a person's identity-provider groups grant.

OIDC_ROLE_MAP (settings, JSON) maps a group to workspaces and roles:
{"ml-team": {"research": "editor"}, "ops": {"research": "admin", "prod": "viewer"}}.
A person in several groups gets, per workspace, the strongest role any of them grants.
"""

import json
from typing import Any

from contextstore.errors import InvalidInput
from contextstore.models import Membership

RANK = {Membership.Role.VIEWER: 0, Membership.Role.EDITOR: 1, Membership.Role.ADMIN: 2}


def role_map_parse(raw: str | dict[str, Any]) -> dict[str, dict[str, str]]:
    """The role map from its JSON text; InvalidInput that says what is wrong with it."""
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            raise InvalidInput(f"OIDC_ROLE_MAP is not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise InvalidInput("OIDC_ROLE_MAP is a JSON object: {\"group\": {\"workspace-slug\": \"role\"}}.")
    for group, grants in raw.items():
        if not isinstance(grants, dict) or not grants:
            raise InvalidInput(f"OIDC_ROLE_MAP[{group!r}] is an object of workspace slug to role.")
        for slug, role in grants.items():
            if role not in Membership.Role.values:
                raise InvalidInput(f"OIDC_ROLE_MAP[{group!r}][{slug!r}] is {role!r}; a role is one "
                                   f"of {', '.join(Membership.Role.values)}.")
    return raw


def managed_workspaces(role_map: dict[str, dict[str, str]]) -> set[str]:
    """The slugs of the workspaces whose memberships single sign-on decides."""
    return {slug for grants in role_map.values() for slug in grants}


def grants_for_groups(groups: Any, role_map: dict[str, dict[str, str]]) -> dict[str, str]:
    """Workspace slug -> role for a person in `groups` (a claim: a list of names, or one name)."""
    if isinstance(groups, str):
        groups = [groups]
    if not isinstance(groups, list):
        return {}
    grants: dict[str, str] = {}
    for group in groups:
        for slug, role in role_map.get(group, {}).items() if isinstance(group, str) else ():
            if slug not in grants or RANK[Membership.Role(role)] > RANK[Membership.Role(grants[slug])]:
                grants[slug] = role
    return grants
