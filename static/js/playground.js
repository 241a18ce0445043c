// The playground: posts the conversation to the real completions endpoint with the session's
// CSRF token, reads the server-sent events with a stream reader and shows the answer as it comes.
"use strict";

(() => {
  const form = document.getElementById("playground");
  const log = document.getElementById("pg-log");
  const meta = document.getElementById("pg-meta");
  const send = document.getElementById("pg-send");
  const stop = document.getElementById("pg-stop");
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  let history = [];
  let controller = null;

  function bubble(role, text) {
    document.getElementById("pg-empty")?.remove();
    const item = document.createElement("div");
    item.className = `msg ${role}`;
    const who = document.createElement("span");
    who.className = "who";
    who.textContent = role === "user" ? "You" : role === "error" ? "Error" : "Assistant";
    const body = document.createElement("div");
    body.className = "body";
    body.textContent = text;
    item.append(who, body);
    log.append(item);
    log.scrollTop = log.scrollHeight;
    return body;
  }

  function messages(text) {
    const system = form.elements.system.value.trim();
    const list = system ? [{ role: "system", content: system }] : [];
    return [...list, ...history, { role: "user", content: text }];
  }

  async function readEvents(response, onDelta, onUsage) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const event = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        for (const line of event.split("\n")) {
          if (!line.startsWith("data:")) continue;
          const data = line.slice(5).trim();
          if (data === "[DONE]") return;
          const chunk = JSON.parse(data);
          if (chunk.error) throw new Error(chunk.error.message || "The stream ended with an error.");
          if (chunk.usage) onUsage(chunk.usage);
          const delta = chunk.choices?.[0]?.delta?.content;
          if (delta) onDelta(delta);
        }
      }
    }
  }

  function seconds(ms) {
    return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
  }

  // What one reply took: tokens in and out, its cost and how long it took (the first token's
  // wait as well), under the reply's bubble.
  function replyFacts(answer, usage, started, firstAt) {
    const facts = document.createElement("div");
    facts.className = "reply-facts";
    const parts = [];
    if (usage) {
      parts.push(`${usage.prompt_tokens ?? 0} → ${usage.completion_tokens ?? 0} tokens`);
      if (usage.cost !== undefined) parts.push(Momor.usd(usage.cost));
    }
    const total = performance.now() - started;
    parts.push(firstAt ? `${seconds(total)} (first token ${seconds(firstAt - started)})` : seconds(total));
    facts.textContent = parts.join(" · ");
    answer.closest(".msg").append(facts);
  }

  async function ask(text) {
    const body = {
      model: form.elements.model.value,
      messages: messages(text),
      stream: true,
      stream_options: { include_usage: true },
    };
    bubble("user", text);
    const answer = bubble("assistant", "");
    answer.classList.add("streaming");
    controller = new AbortController();
    send.disabled = true;
    stop.disabled = false;
    meta.textContent = "Waiting for the first token…";
    const started = performance.now();
    let firstAt = null;
    let usage = null;
    let failed = false;
    try {
      const response = await fetch(form.dataset.endpoint, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
        body: JSON.stringify(body),
        signal: controller.signal,
      });
      if (!response.ok) {
        const failure = await response.json().catch(() => ({}));
        throw new Error(failure.error?.message || `HTTP ${response.status}`);
      }
      meta.textContent = `${response.headers.get("X-Momor-Model") || body.model} via ${response.headers.get("X-Momor-Provider") || "?"}`;
      await readEvents(
        response,
        (delta) => {
          firstAt ??= performance.now();
          answer.textContent += delta;
          log.scrollTop = log.scrollHeight;
        },
        (reported) => { usage = reported; },
      );
      history.push({ role: "user", content: text }, { role: "assistant", content: answer.textContent });
    } catch (error) {
      failed = true;
      if (!answer.textContent) answer.closest(".msg").remove();
      if (meta.textContent.startsWith("Waiting")) meta.textContent = "";
      if (error.name !== "AbortError") bubble("error", error.message);
    } finally {
      answer.classList.remove("streaming");
      if (answer.isConnected) {
        answer.closest(".msg").dataset.done = "true";
        if (!failed || answer.textContent) replyFacts(answer, usage, started, firstAt);
      }
      send.disabled = false;
      stop.disabled = true;
      controller = null;
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = form.elements.message.value.trim();
    if (!text || controller) return;
    form.elements.message.value = "";
    ask(text);
  });
  form.elements.message.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) form.requestSubmit();
  });
  stop.addEventListener("click", () => controller?.abort());
  document.getElementById("pg-clear").addEventListener("click", () => {
    history = [];
    log.replaceChildren();
    meta.textContent = "";
  });
})();
