"""Billing's part of the management API (`/api/manage/`, routed by `momor/api_urls.py`): the
organization's money and records (`money.py`: balance, ledger, generations) and its budgets
(`budgets.py`)."""
