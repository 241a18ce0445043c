"""Secrets scrubbed from text: what Momor answers, stores or logs never holds a key.

`scrub(text, secrets)` masks the given secrets (those sent upstream on one try) and whatever
looks like a key: Momor's `sk-momor-...` keys, provider keys of the `sk-...` family, Bearer
tokens and the password of a URL. `KNOWN` holds every provider key this process has handled in
plaintext (each is noted where it is decrypted or read from the environment), so that the log
filter (`momor.logs`) masks them too. A masked secret keeps at most its last four characters.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

MASK = "****"
# Shorter secrets are masked whole, as the members' UI shows a saved key's last four characters
# only from this length on.
SHOWN_TAIL_FROM = 12
# Shorter strings are not treated as secrets: masking them would garble ordinary words.
SHORTEST_SECRET = 8

_PATTERNS = (
    # Momor's own keys, and provider keys shaped like OpenAI's and Anthropic's.
    re.compile(r"sk-[A-Za-z0-9_\-]{16,}"),
    # Vertex access tokens (OAuth), wherever they appear.
    re.compile(r"ya29\.[A-Za-z0-9_\-.]{8,}"),
)
_BEARER = re.compile(r"(?i)(bearer\s+)([A-Za-z0-9_\-.~+/=]{8,})")
_URL_PASSWORD = re.compile(r"(?i)([a-z][a-z0-9+.\-]*://[^\s:/@]*:)([^\s@/]+)(@)")


def mask(secret: str) -> str:
    """The fixed mask of a secret: `****` and, for a long one, its last four characters."""
    return MASK + (secret[-4:] if len(secret) >= SHOWN_TAIL_FROM else "")


def _forms(secret: str) -> set[str]:
    """The ways a secret can be written in a message: as is, and URL-encoded."""
    return {secret, quote(secret, safe=""), quote_plus(secret, safe="")}


class Secrets:
    """A set of secrets and the one pattern that finds any of them, rebuilt when it grows."""

    def __init__(self) -> None:
        # The masks by secret and the pattern finding them, replaced together.
        self._state: tuple[dict[str, str], re.Pattern[str] | None] = ({}, None)
        self._lock = threading.Lock()

    def note(self, secrets: Iterable[str]) -> None:
        """Remember these secrets (thread-safe; cheap when they are known already)."""
        fresh = [s for s in secrets if len(s) >= SHORTEST_SECRET and s not in self._state[0]]
        if not fresh:
            return
        with self._lock:
            known = dict(self._state[0])
            for secret in fresh:
                for form in _forms(secret):
                    known[form] = mask(secret)
            self._state = (known, _alternation(known))

    def scrub(self, text: str) -> str:
        known, pattern = self._state
        if pattern is None:
            return text
        return pattern.sub(lambda m: known[m.group(0)], text)


def _alternation(known: dict[str, str]) -> re.Pattern[str]:
    # Longest first, so that a secret containing another is masked whole.
    ordered = sorted(known, key=len, reverse=True)
    return re.compile("|".join(re.escape(s) for s in ordered))


KNOWN = Secrets()


def note_secret(secret: str) -> None:
    """Remember a provider key this process holds in plaintext."""
    KNOWN.note((secret,))


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with the given secrets, every secret this process knows, and anything shaped
    like a key masked."""
    if not text:
        return text
    given = Secrets()
    given.note(secrets)
    text = KNOWN.scrub(given.scrub(text))
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: mask(m.group(0)), text)
    text = _BEARER.sub(lambda m: m.group(1) + mask(m.group(2)), text)
    return _URL_PASSWORD.sub(lambda m: m.group(1) + MASK + m.group(3), text)
