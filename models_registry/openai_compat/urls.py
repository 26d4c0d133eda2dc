"""``/v1/``: the OpenAI-compatible endpoint (included by ``dynabench/urls.py``). No trailing slashes:
clients append ``/chat/completions`` and ``/models`` to their base URL as they are."""

from django.urls import path, re_path

from . import views

urlpatterns = [
    path("chat/completions", views.ChatCompletions.as_view(), name="openai-chat-completions"),
    path("models", views.ModelList.as_view(), name="openai-models"),
    path("models/<path:model>", views.ModelDetail.as_view(), name="openai-model"),
    re_path(r"^", views.not_found),  # last: only what no route above matched
]
