"""Scrubbing runs on every log record, a client's URL included: it must take time linear in
what it reads, and `scrub_bounded` must read a bounded part of any text."""

from __future__ import annotations

import time

import pytest

from core.redaction import CUT_MARGIN, MASK, scrub, scrub_bounded

KB = 1000
# Runs of what each pattern starts or continues on, and what makes it give up late: each took
# seconds to minutes on 100 KB when a pattern was tried from every character of a run.
ADVERSARIAL = {
    "letters": "a" * 100 * KB,
    "scheme characters": "a+" * 50 * KB,
    "schemes without slashes": "a:" * 50 * KB,
    "a scheme and colons": "a://" + ":" * 100 * KB,
    "users without passwords": "a://b" * 20 * KB,
    "passwords without @": "a://b:" + "c" * 100 * KB,
    "bearer and spaces": "bearer" + " " * 100 * KB,
    "bearer words": "bearer " * 15 * KB,
    "key prefixes": "sk-" * 34 * KB,
    "token prefixes": "ya29." * 20 * KB,
}


@pytest.mark.parametrize("text", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_scrubbing_100_kb_takes_linear_time(text: str) -> None:
    started = time.perf_counter()
    scrub(text)
    assert time.perf_counter() - started < 1.0  # linear: a few milliseconds


def test_it_still_masks_a_url_password_after_a_run_of_scheme_characters() -> None:
    text = "see xx+postgres://momor:hunter2secret@db/momor and https://u:p@h/"
    assert scrub(text) == f"see xx+postgres://momor:{MASK}@db/momor and https://u:{MASK}@h/"


def test_a_short_text_is_scrubbed_whole() -> None:
    key = "sk-" + "k" * 40
    assert scrub_bounded(f"a {key} b", 100) == f"a {MASK}kkkk b"


def test_a_long_text_keeps_its_first_and_last_halves() -> None:
    text = "h" * 50 * KB + "m" * 100 * KB + "t" * 50 * KB
    found = scrub_bounded(text, 8192)
    assert found == "h" * 4096 + f"[... {len(text) - 8192:,} characters cut ...]" + "t" * 4096


@pytest.mark.parametrize("offset", range(-60, 61, 7))
def test_a_key_the_cut_falls_in_is_never_kept_in_part(offset: int) -> None:
    """Keys cut at the head's end or the tail's start: masked whole, or left out."""
    key = "sk-momor-" + "s3cr3t" * 8
    masks = (" " + "sk-" + "x" * 30) * 40  # masks before the cut shorten the text
    text = masks + " " * (4096 + offset - len(masks)) + key + " " * 2 * CUT_MARGIN
    text += " " * 4096 + key + " " * (4096 - offset)
    found = scrub_bounded(text, 8192)
    assert "s3cr3t" not in found


def test_scrubbing_a_long_text_reads_a_bounded_part_of_it() -> None:
    text = "a" * 20_000_000
    started = time.perf_counter()
    found = scrub_bounded(text, 8192)
    assert time.perf_counter() - started < 0.5
    assert len(found) < 8192 + 100
