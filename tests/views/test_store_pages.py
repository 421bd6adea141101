"""The dashboard's Store pages: namespaces, an item's value, its edit, versions and undo."""

from contextstore.models import StoreItem
from contextstore.services.common import Actor
from contextstore.services.store import store_batch
from contextstore.storespec import check_ops


def put(workspace, namespace, key, value):
    store_batch(workspace=workspace, actor=Actor.system("agent"),
                ops=check_ops([{"op": "put", "namespace": namespace, "key": key, "value": value}]))


def test_a_person_browses_reads_edits_and_undoes(editor_client, workspace):
    put(workspace, ["memories", "ann"], "notes/diet.md", {"content": "<script>alert(1)</script> vegan"})
    page = editor_client.get("/store/").content.decode()
    assert "memories / ann" in page
    listing = editor_client.get("/store/?ns=memories&ns=ann").content.decode()
    item = StoreItem.objects.get()
    assert f"/store/items/{item.pk}/" in listing and "<script>alert" not in listing
    detail = editor_client.get(f"/store/items/{item.pk}/").content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt; vegan" in detail and "<script>alert" not in detail
    response = editor_client.post(f"/store/items/{item.pk}/edit/", {"value": '{"content": "vegetarian"}'})
    assert response.status_code == 302
    item.refresh_from_db()
    assert (item.value, item.version) == ({"content": "vegetarian"}, 2)
    editor_client.post(f"/store/items/{item.pk}/undo/")
    item.refresh_from_db()
    assert (item.value["content"].endswith("vegan"), item.version) == (True, 3)
    editor_client.post(f"/store/items/{item.pk}/restore/", {"version": "2"})
    item.refresh_from_db()
    assert item.value == {"content": "vegetarian"}
    bad = editor_client.post(f"/store/items/{item.pk}/edit/", {"value": "[1, 2"})
    assert bad.status_code == 400 and item.versions.count() == 4
    not_object = editor_client.post(f"/store/items/{item.pk}/edit/", {"value": "[1, 2]"})
    assert not_object.status_code == 400 and "The value must be a JSON object." in not_object.content.decode()
    assert item.versions.count() == 4


def test_viewers_read_but_cannot_change_and_others_see_nothing(viewer_client, outsider, workspace):
    from django.test import Client

    put(workspace, ["m"], "k", {"v": 1})
    item = StoreItem.objects.get()
    assert viewer_client.get(f"/store/items/{item.pk}/").status_code == 200
    assert viewer_client.post(f"/store/items/{item.pk}/undo/").status_code == 403
    other = Client()
    other.force_login(outsider)
    assert other.get(f"/store/items/{item.pk}/").status_code == 404
    assert other.post(f"/store/items/{item.pk}/undo/").status_code == 404
    assert "No items" in other.get("/store/").content.decode()
