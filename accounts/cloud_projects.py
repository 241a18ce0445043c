"""A Google Cloud service account's `project_id`, which Vertex's URL carries in its path: only
an id as Google makes them may be saved or sent, so a saved key cannot point an organization's
calls at another path (`?`, `#`, `/`, `..`) while they are billed at the catalog's price.

Google's rule: 6 to 30 lowercase letters, digits and hyphens, starting with a letter and not
ending with a hyphen; an older project may carry its domain first (`example.com:my-project`).
https://cloud.google.com/resource-manager/docs/creating-managing-projects"""

from __future__ import annotations

import re

import orjson

_PROJECT_ID = re.compile(
    r"(?:[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?:)?[a-z][a-z0-9-]{4,28}[a-z0-9]"
)


def is_project_id(value: object) -> bool:
    return isinstance(value, str) and _PROJECT_ID.fullmatch(value) is not None


def project_id_problem(secret: str) -> str | None:
    """What is wrong with the project of a key that is a service account JSON (an object with
    a `project_id`); None for a good one, and for any other key."""
    try:
        info = orjson.loads(secret)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(info, dict) or "project_id" not in info:
        return None
    if is_project_id(info["project_id"]):
        return None
    return "the service account's project_id is not a Google Cloud project id"
