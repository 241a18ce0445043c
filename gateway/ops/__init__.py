"""What an operator watches a gateway with: probes for the load balancer (`probes`),
Prometheus metrics (`metrics`, `figures`), traces (`tracing`), one JSON log line per call
(`calllog`), and the admin's operations page (`page`). Per-call figures come from one observer
of the record hand-off (`billing.calls.observers`), so the hot path gains one hook."""
