// The live feed: new generations of the organization arrive over a websocket and are put at
// the top of the generations table (only on its first, unfiltered page).
"use strict";

(() => {
  const STATUS = { success: "Served", failed: "Failed", refused: "Refused", cancelled: "Cancelled by the client" };
  let socket = null;
  let retry = 1000;

  function cell(text, className) {
    const td = document.createElement("td");
    if (className) td.className = className;
    td.textContent = text;
    return td;
  }

  function modelCell(g) {
    const td = document.createElement("td");
    td.className = "model";
    const name = document.createElement("span");
    if (g.model) name.textContent = g.model;
    else if (g.requested) {
      name.className = "requested";
      name.title = "Requested; no model served it";
      name.textContent = g.requested;
    } else {
      name.className = "muted";
      name.textContent = "—";
    }
    const api = document.createElement("span");
    api.className = "badge api";
    api.title = g.api_name || g.api;
    api.textContent = g.api;
    td.append(name, " ", api);
    return td;
  }

  function row(g) {
    const tr = document.createElement("tr");
    tr.className = "arrived";
    tr.dataset.requestId = g.request_id;
    const first = document.createElement("td");
    first.className = "when";
    const link = document.createElement("a");
    link.href = `/generations/${encodeURIComponent(g.request_id)}/`;
    link.title = g.created_at;
    link.textContent = g.when;
    first.append(link);
    const status = document.createElement("td");
    const badge = document.createElement("span");
    badge.className = `badge ${g.status}`;
    badge.textContent = STATUS[g.status] || g.status;
    status.append(badge);
    tr.append(
      first,
      modelCell(g),
      cell(g.provider || "—"),
      status,
      cell(g.prompt_tokens.toLocaleString("en-US"), "num"),
      cell(g.completion_tokens.toLocaleString("en-US"), "num"),
      cell(`${g.latency_ms.toLocaleString("en-US")} ms`, "num"),
      cell(g.cost_text, "num"),
    );
    return tr;
  }

  function show(state, text) {
    const box = document.getElementById("live-status");
    if (!box) return;
    box.dataset.state = state;
    box.querySelector(".text").textContent = text;
  }

  function connect() {
    if (!document.querySelector("#generations[data-live]")) return;
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${location.host}/ws/generations/`);
    socket.addEventListener("open", () => {
      retry = 1000;
      show("open", "Live: new generations appear here as they are recorded.");
    });
    socket.addEventListener("message", (event) => {
      if (!document.querySelector("#generations[data-live]")) return;
      const { generation } = JSON.parse(event.data);
      const body = document.querySelector("#generations-table tbody");
      if (!body || body.querySelector(`tr[data-request-id="${CSS.escape(generation.request_id)}"]`)) return;
      body.querySelector(".empty-row")?.remove();
      body.prepend(row(generation));
    });
    socket.addEventListener("close", () => {
      show("closed", "Live feed disconnected; reconnecting…");
      setTimeout(connect, retry);
      retry = Math.min(retry * 2, 30000);
    });
  }

  document.addEventListener("DOMContentLoaded", connect);
  // The filters swap the table in place (htmx): join or leave the feed with it.
  document.addEventListener("htmx:afterSettle", () => {
    if (document.querySelector("#generations[data-live]") && (!socket || socket.readyState > 1)) connect();
  });
})();
