"""The members' UI's formats as template filters: `{{ amount|usd }}`, `{{ moment|when }}`,
`{{ moment|day }}` (core.formatting holds the rules); and `{{ rows|of:key.pk }}`, what a page's
mapping holds for one of its rows."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from django import template
from django.utils import timezone
from django.utils.dateformat import format as date_format

from core.formatting import DATE_FORMAT, usd, when

register = template.Library()
register.filter("usd", usd)
register.filter("when", when)


@register.filter
def day(value: datetime | date | None) -> str:
    """Only the calendar day of a moment, written as `when` writes days."""
    if value is None:
        return ""
    if isinstance(value, datetime) and timezone.is_aware(value):
        value = timezone.localtime(value)
    return date_format(value, DATE_FORMAT)


@register.filter
def of(mapping: dict[int, list[Any]], pk: int) -> list[Any]:
    """The mapping's list for `pk`, empty when it has none."""
    return mapping.get(pk, [])
