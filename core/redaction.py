"""Secrets scrubbed from text: what Momor answers, stores or logs never holds a key.

`scrub(text, secrets)` masks the given secrets (those sent upstream on one try) and whatever
looks like a key: Momor's `sk-momor-...` keys, provider keys of the `sk-...` family, Bearer
tokens and the password of a URL. `KNOWN` holds every provider key this process has handled in
plaintext (each is noted where it is decrypted or read from the environment), so that the log
filter (`momor.logs`) masks them too. A masked secret keeps at most its last four characters.
`scrub_bounded` is `scrub` for text of any length, such as a log line: it keeps a long text's
first and last part only, and works on those alone.
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
# A scheme starts where a run of scheme characters starts (the lookbehind): tried from every
# letter of a long run instead, the pattern took time quadratic in the run's length.
_URL_PASSWORD = re.compile(r"(?i)(?<![a-z0-9+.\-])([a-z][a-z0-9+.\-]*://[^\s:/@]*:)([^\s@/]+)(@)")


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


# A secret this long or shorter that a cut would halve is masked whole or left out whole.
CUT_MARGIN = 16 * 1024


def scrub_bounded(text: str, limit: int) -> str:
    """`scrub(text)`, with a text longer than `limit` characters cut to its first and last
    `limit // 2` and a note of how many were left out between. Each kept part is scrubbed with
    `CUT_MARGIN` characters more around its cut, so a secret the cut falls in is masked or left
    out, never kept in part; the work is bounded by `limit`, whatever the text's length."""
    if len(text) <= limit:
        return scrub(text)
    half = limit // 2
    head, tail = text[: half + CUT_MARGIN], text[-(half + CUT_MARGIN) :]
    kept_head, kept_tail = _scrubbed_head(head, half), _scrubbed_tail(tail, half)
    return f"{kept_head}[... {len(text) - 2 * half:,} characters cut ...]{kept_tail}"


def _scrubbed_head(window: str, keep: int) -> str:
    # A secret cut at the window's end starts at least CUT_MARGIN - len(secret) past `keep`;
    # masks before it move it forward by what they shortened the text, so the cut moves too.
    clean = scrub(window)
    return clean[: keep - max(0, len(window) - len(clean))]


def _scrubbed_tail(window: str, keep: int) -> str:
    clean = scrub(window)
    keep -= max(0, len(window) - len(clean))
    return clean[len(clean) - keep :]
