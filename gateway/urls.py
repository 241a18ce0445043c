from __future__ import annotations

from django.urls import path

from gateway.edge import count_tokens, generation_view, playground, views
from gateway.edge.entries import BY_PATH, COUNT_TOKENS_PATHS

NAMES = {
    "/v1/chat/completions": "chat-completions",
    "/v1/embeddings": "embeddings",
    "/v1/messages": "messages",
    "/v1/messages/count_tokens": "count-tokens",
}

urlpatterns = [
    *(path(route.lstrip("/"), views.call, name=NAMES.get(route)) for route in sorted(BY_PATH)),
    *(
        path(route.lstrip("/"), count_tokens.count_tokens, name=NAMES.get(route))
        for route in sorted(COUNT_TOKENS_PATHS)
    ),
    path("v1/models", views.models, name="models"),
    path("api/v1/models", views.models),
    path("v1/generation", generation_view.generation, name="generation"),
    path("api/v1/generation", generation_view.generation),
    path("playground/", playground.playground, name="playground"),
]
