"""/openai/v1/: the OpenAI Conversations API (contextstore/api/openai_conversations.py)."""

from django.urls import path, re_path

from contextstore.api import openai_conversations as views

app_name = "openai"
# No trailing slashes: the SDKs request {base_url}/conversations/{id}/items as OpenAI spells them.
urlpatterns = [
    path("v1/conversations", views.ConversationsView.as_view(), name="conversations"),
    path("v1/conversations/<str:conversation_id>", views.ConversationView.as_view(), name="conversation"),
    path("v1/conversations/<str:conversation_id>/items", views.ItemsView.as_view(), name="items"),
    path("v1/conversations/<str:conversation_id>/items/<str:item_id>", views.ItemView.as_view(), name="item"),
    re_path(r"^[\s\S]*$", views.not_found),
]
