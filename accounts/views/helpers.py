"""Small shared pieces of the views."""

from __future__ import annotations

import re

from django import forms
from django.http import HttpRequest

# A label's unit in parentheses, "Credit limit (USD)": the field's name in a sentence goes
# without it.
_UNIT = re.compile(r"\s*\([^)]*\)$")


def is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def errors_sentence(form: forms.Form) -> str:
    """A form's errors as a flash message reads them: each field named by its label, "Credit
    limit: ensure this value is greater than or equal to 0." """
    parts = []
    for name, errors in form.errors.items():
        field = form.fields.get(name)
        label = _UNIT.sub("", str(field.label)) if field is not None and field.label else ""
        for error in map(str, errors):
            parts.append(f"{label}: {_lower_first(error)}" if label else error)
    return " ".join(parts)


def _lower_first(text: str) -> str:
    """ "Ensure this value…" → "ensure this value…" (an acronym, "USD…", stays whole)."""
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        return text[0].lower() + text[1:]
    return text
