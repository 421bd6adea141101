"""Finding 4: a comment's author demoted to viewer could still edit and delete their comments:
the author was trusted for having written it, whatever their role now. Permissions are those
held when the action is taken. (Every other dashboard action checks the current role before it
acts: thread_action, share links, replays, scores, archiving.)"""

from django.test import Client

from contextstore.models import Comment, Membership


def _demote(user, workspace) -> None:
    Membership.objects.filter(user=user, workspace=workspace).update(role=Membership.Role.VIEWER)


def test_an_author_demoted_to_viewer_can_no_longer_edit_or_delete_their_comment(
        editor_client, editor, session, workspace):
    written = editor_client.post(f"/sessions/{session.pk}/comments/", {"text": "Looks wrong here."})
    assert written.status_code in (200, 302)
    comment = Comment.objects.get()
    _demote(editor, workspace)
    edited = editor_client.post(f"/comments/{comment.pk}/edit/", {"text": "rewritten"})
    assert edited.status_code == 403
    deleted = editor_client.post(f"/comments/{comment.pk}/delete/")
    assert deleted.status_code == 403
    comment.refresh_from_db()
    assert comment.text == "Looks wrong here." and comment.edited_at is None
    # and the page offers them no edit or delete button any more
    page = editor_client.get(f"/sessions/{session.pk}/comments/").content.decode()
    assert f"/comments/{comment.pk}/edit/" not in page


def test_an_author_removed_from_the_workspace_cannot_change_it_either(
        editor_client, editor, session, workspace):
    editor_client.post(f"/sessions/{session.pk}/comments/", {"text": "Mine."})
    comment = Comment.objects.get()
    Membership.objects.filter(user=editor, workspace=workspace).delete()
    assert editor_client.post(f"/comments/{comment.pk}/delete/").status_code == 404
    assert Comment.objects.filter(pk=comment.pk).exists()


def test_an_author_who_still_edits_and_an_admin_may_change_it(editor_client, editor, session, workspace):
    editor_client.post(f"/sessions/{session.pk}/comments/", {"text": "First."})
    comment = Comment.objects.get()
    assert editor_client.post(f"/comments/{comment.pk}/edit/", {"text": "Second."}).status_code in (200, 302)
    comment.refresh_from_db()
    assert comment.text == "Second."
    _demote(editor, workspace)
    from django.contrib.auth import get_user_model
    admin = get_user_model().objects.create_user("ada", password="pw-for-tests-123")
    Membership.objects.create(workspace=workspace, user=admin, role=Membership.Role.ADMIN)
    client = Client()
    client.force_login(admin)
    assert client.post(f"/comments/{comment.pk}/delete/").status_code in (200, 302)
    assert not Comment.objects.filter(pk=comment.pk).exists()
