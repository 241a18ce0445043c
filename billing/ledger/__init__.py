"""The credits ledger: every posting with the balance it moves (`posting`), operators' credits
and refunds, organizations created with their first credits, and admission's view of the
ledger (`admission_sync`: balances loaded and kept current in the admission store)."""
