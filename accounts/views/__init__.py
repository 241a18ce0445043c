"""Accounts' pages of the members' UI: one module per page group, each view thin (parse, one
call, render). Billing's pages are in billing.views, the playground in gateway.edge.playground."""
