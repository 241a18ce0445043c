"""Admission of calls: per-key rate limits and credit reservations, held where every gateway
process sees them (Redis when REDIS_URL is set, this process otherwise).

An organization's available credit is its ledger balance as of a known ledger entry, minus the
charges settled since but not yet posted to the ledger, minus the reservations of calls in
flight. A call reserves its worst cost before it is tried; once it ends the reservation is
settled to the actual cost (an unposted charge) or released; the record writer posts the
charge to the ledger and advances the balance. Reservations and unposted charges of a process
that died expire.

What the rest of Momor calls of admission (admit, renew, settle, release, and what the ledger
tells it) is billing.admission.operations; outside the package, only it and what this package
exports are imported."""

from __future__ import annotations

from billing.admission.base import (
    AdmissionStore,
    Limit,
    NeedBalance,
    NeedSpend,
    RateState,
    Refused,
    Ticket,
)
from billing.admission.select import store

__all__ = [
    "AdmissionStore",
    "Limit",
    "NeedBalance",
    "NeedSpend",
    "RateState",
    "Refused",
    "Ticket",
    "store",
]
