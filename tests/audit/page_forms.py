"""A page's form as a browser submits it unchanged: each field's name and current value."""

from __future__ import annotations

from html.parser import HTMLParser


class _FormFields(HTMLParser):
    def __init__(self, form_id: str) -> None:
        super().__init__()
        self.form_id, self.inside, self.fields = form_id, False, list[tuple[str, str]]()
        self.select: str | None = None
        self.textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {name: value or "" for name, value in attrs}
        if tag == "form" and a.get("id") == self.form_id:
            self.inside = True
        if not self.inside:
            return
        if tag == "input" and a.get("name") and _sent(a):
            self.fields.append((a["name"], a.get("value", "")))
        elif tag == "select":
            self.select = a.get("name")
        elif tag == "option" and self.select and "selected" in a:
            self.fields.append((self.select, a.get("value", "")))
        elif tag == "textarea":
            self.textarea = a.get("name")
            self.fields.append((self.textarea or "", ""))

    def handle_data(self, data: str) -> None:
        if self.textarea:
            name, text = self.fields.pop()
            self.fields.append((name, text + data))

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.inside = False
        elif tag == "select":
            self.select = None
        elif tag == "textarea":
            self.textarea = None


def _sent(a: dict[str, str]) -> bool:
    kind = a.get("type", "text")
    if kind in ("submit", "button", "image", "file", "reset"):
        return False
    return kind not in ("checkbox", "radio") or "checked" in a


def form_data(html: str, form_id: str) -> dict[str, list[str]]:
    """The fields of the form `form_id`, each name with its values in the page's order."""
    parser = _FormFields(form_id)
    parser.feed(html)
    data: dict[str, list[str]] = {}
    for name, value in parser.fields:
        data.setdefault(name, []).append(value)
    return data
