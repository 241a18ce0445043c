from __future__ import annotations

from django.urls import path

from gateway.edge import generation_view, playground, views

urlpatterns = [
    path("v1/chat/completions", views.chat_completions, name="chat-completions"),
    path("models/completions", views.chat_completions),
    path("api/v1/chat/completions", views.chat_completions),
    path("v1/embeddings", views.embeddings, name="embeddings"),
    path("api/v1/embeddings", views.embeddings),
    path("v1/models", views.models, name="models"),
    path("api/v1/models", views.models),
    path("v1/generation", generation_view.generation, name="generation"),
    path("api/v1/generation", generation_view.generation),
    path("playground/", playground.playground, name="playground"),
]
