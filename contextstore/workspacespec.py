"""The shape of a workspace's slug, as every door that names a new one takes it (the admin's
form, create_api_token): services.workspaces.workspace_ensure trusts it."""

from typing import Any

from django.utils.text import slugify

from contextstore.errors import InvalidInput


def check_slug(slug: Any) -> str:
    """Lower-case letters, digits and dashes (what slugify leaves as it is), not empty."""
    if not isinstance(slug, str) or not slug or slugify(slug) != slug:
        raise InvalidInput("A workspace slug is lower-case letters, digits and dashes.",
                           details={"slug": slug})
    return slug
