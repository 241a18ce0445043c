"""The plumbing every app shares, below them all: Redis (client, keys, pipeline, refusals,
the breaker, state shared between processes), database threads and row copy, durations,
paging, formatting, redaction and the ASGI types. It imports nothing of the apps."""
