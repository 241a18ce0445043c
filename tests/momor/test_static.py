"""/static/ served by Momor itself (momor.static)."""

from __future__ import annotations

from django.test import Client


def test_static_files_are_served(db: None) -> None:
    response = Client().get("/static/css/momor.css")
    assert response.status_code == 200
    assert b"sidebar" in response.content
    assert Client().get("/static/../manage.py").status_code in {400, 404}
