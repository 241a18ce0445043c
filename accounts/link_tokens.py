"""Tokens that links carry in their path (an invitation's, a password reset's), masked in log
lines: an access log keeps every path it serves. The patterns read each character once."""

from __future__ import annotations

import re

MASK = "****"

# An invitation's token is signed (`payload:time:signature`): a segment with a colon.
_INVITATION = re.compile(r"(/invitations/)[^/\s?#&\"':%]*(?::|%3[Aa])[^/\s?#&\"']*")
_PASSWORD_RESET = re.compile(r"(/reset/[^/\s?#&\"']+/)(?!set-password/)[^/\s?#&\"']+")


def mask_link_tokens(text: str) -> str:
    if "/invitations/" in text:
        text = _INVITATION.sub(rf"\g<1>{MASK}", text)
    if "/reset/" in text:
        text = _PASSWORD_RESET.sub(rf"\g<1>{MASK}", text)
    return text
