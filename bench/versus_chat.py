"""The other APIs' calls beside a Chat Completions call of the same section: each one's added
latency (against its own direct call, as chat's is against chat's) as a ratio to chat's, at
p50 and p99, and whether the ratio is over the limit."""

from __future__ import annotations

from typing import Any

Metrics = dict[str, Any]

LIMIT = 1.2
QUANTILES = ("p50", "p99")

# The API, its call, its phase and chat's phase in a section's `added` (each `_<quantile>`).
PAIRS = (
    ("embeddings", "at c1", "embeddings_c1", "latency_c1"),
    ("messages", "at c1", "messages_c1", "latency_c1"),
    ("messages", "to the first chunk, stream c1", "messages_stream_c1_first", "stream_c1_first"),
    ("messages", "to the last chunk, stream c1", "messages_stream_c1_last", "stream_c1_last"),
    ("responses", "at c1", "responses_c1", "latency_c1"),
    ("responses", "to the first chunk, stream c1", "responses_stream_c1_first", "stream_c1_first"),
    ("responses", "to the last chunk, stream c1", "responses_stream_c1_last", "stream_c1_last"),
)


def ratios(section: Metrics) -> list[Metrics]:
    """Every pair at every quantile; a call the section did not measure has no `added_ms`."""
    added = section["added"]
    return [
        _row(api, call, q, added.get(f"{ours}_{q}"), added.get(f"{chat}_{q}"))
        for api, call, ours, chat in PAIRS
        for q in QUANTILES
    ]


def measured(section: Metrics) -> bool:
    """Whether `section` measured any other API's call beside chat's."""
    return any(row["added_ms"] is not None for row in ratios(section))


def over(sections: list[Metrics]) -> list[Metrics]:
    """Each ratio over the limit, with its section's gateway."""
    return [
        {"gateway": s["gateway"], **row}
        for s in sections
        for row in s.get("versus_chat") or ()
        if row["over"]
    ]


def _row(api: str, call: str, q: str, ours: float | None, chat: float | None) -> Metrics:
    ratio = None if ours is None or chat is None or chat <= 0 else round(ours / chat, 2)
    return {
        "api": api, "call": call, "quantile": q, "added_ms": ours, "chat_added_ms": chat,
        "ratio": ratio, "limit": LIMIT, "over": None if ratio is None else ratio > LIMIT,
    }  # fmt: skip


def text(sections: list[Metrics]) -> str:
    """The measured ratios of each section, one line each, those over the limit flagged."""
    lines = []
    for section in sections:
        for row in section.get("versus_chat") or ():
            if row["added_ms"] is None:
                continue
            ratio = "no ratio" if row["ratio"] is None else f"{row['ratio']}x"
            flag = f"  OVER {LIMIT}x" if row["over"] else ""
            lines.append(
                f"  {section['gateway']}: {row['api']} {row['call']} {row['quantile']}: "
                f"{row['added_ms']} ms vs {row['chat_added_ms']} ms = {ratio}{flag}"
            )
    return "\n".join(lines)
