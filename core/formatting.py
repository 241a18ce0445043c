"""How Momor writes money and moments. The members' UI, the same way on every page: US dollars
with at least two decimals and up to six (enough to show a call that costs a few millionths),
and dates as "Dec 1, 2026" or "Dec 1, 2026 14:05" in the server's time zone. The management
API's JSON (`money`) and the management commands' output (`format_usd`) have their own."""

from __future__ import annotations

from datetime import date, datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html

SMALLEST = Decimal("0.000001")
DATE_FORMAT = "M j, Y"
MOMENT_FORMAT = "M j, Y H:i"


def usd(value: object) -> str:
    """$1,234.50, $0.000033, -$2.00; a non-zero amount under a millionth reads <$0.000001."""
    try:
        amount = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return ""
    if not amount.is_finite():
        return ""
    sign = "-" if amount < 0 else ""
    size = abs(amount)
    if 0 < size < SMALLEST:
        return f"{sign}<${SMALLEST}"
    text = f"{size.quantize(SMALLEST, rounding=ROUND_HALF_UP):,f}"
    whole, cents = text.split(".")
    return f"{sign}${whole}.{cents.rstrip('0').ljust(2, '0')}"


def when(value: datetime | date | None) -> str:
    """A moment as Dec 1, 2026 14:05 (local time), a calendar day as Dec 1, 2026."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        moment = timezone.localtime(value) if timezone.is_aware(value) else value
        return date_format(moment, MOMENT_FORMAT)
    return date_format(value, DATE_FORMAT)


def clipped(text: str) -> str:
    """A long value cut to its column's width with an ellipsis (styled as `.clip` in the
    admin's templates/admin/base_site.html), whole on hover."""
    return format_html('<span class="clip" title="{}">{}</span>', text, text)


def money(amount: Decimal) -> str:
    """USD as shown in JSON: fixed-point, never exponent notation (`str` of a zero with nine
    places is "0E-9")."""
    return format(amount, "f")


def format_usd(amount: Decimal) -> str:
    """12.500000000 as '12.50 USD': trailing zeros dropped, but always cents."""
    whole, _, fraction = f"{amount.normalize():f}".partition(".")
    return f"{whole}.{fraction.ljust(2, '0')} USD"


def spreadsheet_inert(value: object) -> object:
    """A CSV cell a spreadsheet would run as a formula (a provider's error, a name) quoted."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@"):
        return "'" + value
    return value
