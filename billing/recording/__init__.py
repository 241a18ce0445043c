"""The hand-off of a finished call (`hand_off.record_call`): settled in Redis and appended to the
records stream, or written to this process's journal and replayed from it when a store can
take it; a stream's durable trace while it runs (`progress`), and what the settle is given
(`settlement`)."""
