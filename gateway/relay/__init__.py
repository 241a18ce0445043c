"""A call on its way through its candidates: admitted (`admit`, against its worst case), tried
in order (`failover`, `attempts`), its answer relayed whole or streamed (`streaming`, `sse`,
`passthrough`) with Momor's fields, usage and metadata added."""
