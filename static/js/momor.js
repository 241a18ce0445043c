// Small enhancements shared by every page: copy buttons and confirmations, and the money
// format of the pages (accounts/formatting.py) for what scripts draw.
"use strict";

window.Momor = {
  // $1,234.50, $0.000033, -$2.00: two decimals at least, six at most, as the pages write it.
  usd(value) {
    const amount = Number(value);
    if (!Number.isFinite(amount)) return "";
    const size = Math.abs(amount);
    const sign = amount < 0 ? "-" : "";
    if (size > 0 && size < 0.000001) return `${sign}<$0.000001`;
    const text = size.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 6 });
    return `${sign}$${text}`;
  },
};

document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const source = document.querySelector(button.dataset.copy);
  const text = source ? source.textContent.trim() : "";
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    document.execCommand("copy");
  }
  const label = button.textContent;
  button.textContent = "Copied";
  setTimeout(() => { button.textContent = label; }, 1500);
});

// Markup asks for behaviour by data attributes (the Content-Security-Policy runs no inline
// handler): a select that submits its form when changed, a button that opens or closes a part.
document.addEventListener("change", (event) => {
  const field = event.target.closest("[data-autosubmit]");
  if (field && field.form) field.form.submit();
});

document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-toggle-open]");
  if (button) document.querySelector(button.dataset.toggleOpen)?.classList.toggle("open");
});

document.addEventListener("submit", (event) => {
  const question = event.target.dataset.confirm;
  if (question && !window.confirm(question)) event.preventDefault();
});

// Each table cell carries its column's name as data-label, which narrow screens show beside
// the value when a table's rows are stacked (momor.css); rows added later (htmx swaps, the
// live feed) are labelled as they arrive.
function labelCells(root) {
  for (const table of root.querySelectorAll(".table-wrap table")) {
    const names = [...table.querySelectorAll("thead th")].map((th) => th.textContent.trim());
    for (const row of table.querySelectorAll("tbody tr")) {
      [...row.cells].forEach((cell, n) => {
        if (names[n] && !cell.hasAttribute("colspan")) cell.dataset.label = names[n];
      });
    }
  }
}

document.addEventListener("DOMContentLoaded", () => {
  labelCells(document);
  new MutationObserver(() => labelCells(document)).observe(document.body, { childList: true, subtree: true });
});
