"""Saved views: a person's filters of a list page under a name (models.SavedView). The query
arrives normalised (contextstore.viewspec, at the door); these own the writes: a name unique
per person and page, one default per person and page, only the owner changes a view."""

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import RestrictedError

from contextstore.errors import Conflict, NotFound
from contextstore.models import SavedView, Workspace
from contextstore.services.common import Actor, audit


def _owned(view: SavedView, user: User | None) -> None:
    if user is None or view.owner_id != user.pk:
        raise NotFound("No such saved view.")  # another person's view is not theirs to change


def saved_view_create(*, workspace: Workspace, owner: User, page: str, name: str, query: str,
                      shared: bool = False, is_default: bool = False, actor: Actor) -> SavedView:
    with transaction.atomic():
        if is_default:
            SavedView.objects.filter(workspace=workspace, owner=owner, page=page,
                                     is_default=True).update(is_default=False)
        try:
            with transaction.atomic():
                view = SavedView.objects.create(workspace=workspace, owner=owner, page=page, name=name,
                                                query=query, shared=shared, is_default=is_default)
        except IntegrityError:
            raise Conflict(f"You already have a view named “{name}” on this page.") from None
        audit(actor=actor, action="saved_view.create", target=view, workspace=workspace, page=page)
    return view


def saved_view_update(*, view: SavedView, user: User | None, actor: Actor, name: str | None = None,
                      shared: bool | None = None, is_default: bool | None = None) -> SavedView:
    """Renames, shares or unshares, makes (or stops being) the person's default on its page."""
    _owned(view, user)
    with transaction.atomic():
        if is_default:
            (SavedView.objects.filter(workspace_id=view.workspace_id, owner=view.owner_id, page=view.page,
                                      is_default=True).exclude(pk=view.pk).update(is_default=False))
        if name is not None:
            view.name = name
        if shared is not None:
            view.shared = shared
        if is_default is not None:
            view.is_default = is_default
        try:
            with transaction.atomic():
                view.save()
        except IntegrityError:
            raise Conflict(f"You already have a view named “{name}” on this page.") from None
        audit(actor=actor, action="saved_view.update", target=view, workspace=view.workspace)
    return view


def saved_view_delete(*, view: SavedView, user: User | None, actor: Actor) -> None:
    _owned(view, user)
    with transaction.atomic():
        audit(actor=actor, action="saved_view.delete", target=view, workspace=view.workspace,
              name=view.name)
        try:
            view.delete()
        except RestrictedError:
            raise Conflict("An alert rule is scoped to this view: change or delete the rule first.") from None
