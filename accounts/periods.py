"""A budget's period as a window of the UTC calendar: a day, an ISO week (from Monday), a month,
or all time. A window is named by its first day, so every process that reads the same clock
names it alike."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from accounts.models import BudgetPeriod, BudgetScope


@dataclass(frozen=True, slots=True)
class Window:
    """Days from `start` up to `end` (excluded); both None for all time."""

    label: str
    start: date | None = None
    end: date | None = None

    @property
    def resets_at(self) -> datetime | None:
        """When the next window starts (UTC midnight); None for all time."""
        return datetime.combine(self.end, time(), tzinfo=UTC) if self.end else None


ALL_TIME = Window("")


def window(period: str, moment: datetime) -> Window:
    """The window of `period` that holds `moment`."""
    day = moment.astimezone(UTC).date()
    if period == BudgetPeriod.DAILY:
        return Window(f"d{day.isoformat()}", day, day + timedelta(days=1))
    if period == BudgetPeriod.WEEKLY:
        monday = day - timedelta(days=day.weekday())
        return Window(f"w{monday.isoformat()}", monday, monday + timedelta(days=7))
    if period == BudgetPeriod.MONTHLY:
        first = day.replace(day=1)
        following = (first + timedelta(days=32)).replace(day=1)
        return Window(f"m{first.isoformat()}", first, following)
    return ALL_TIME


SCOPE_LETTERS = {BudgetScope.KEY: "k", BudgetScope.MEMBER: "m"}


@dataclass(frozen=True, slots=True)
class Meter:
    """What a budget counts: its scope's spend in one window. `scope_id` is the key's id, the
    member's user id, or the organization's id. A key's credit limit counts its key's spend in
    all time, the meter a key's total budget counts too."""

    scope: str
    scope_id: int
    window: Window

    @property
    def name(self) -> str:
        """Unique in its organization: `k12`, `k12@d2026-12-06`, `m5@w2026-11-30`,
        `o@m2026-12-01`."""
        letter = SCOPE_LETTERS.get(BudgetScope(self.scope))
        tag = f"{letter}{self.scope_id}" if letter else "o"
        return f"{tag}@{self.window.label}" if self.window.label else tag
