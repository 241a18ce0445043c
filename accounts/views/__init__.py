"""The members' web UI: one module per page group, each view thin (parse, one call, render)."""
