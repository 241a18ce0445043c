// The playground: one form for three APIs, the member's pick. Chat Completions and Messages post
// the conversation to their real endpoint with the session's CSRF token and show the answer as
// its server-sent events arrive; embeddings posts one input per line and shows each vector's
// size and first values. Under each answer: its tokens, cost, time and request id, the id
// linked to the call's record.
"use strict";

(() => {
  const form = document.getElementById("playground");
  const picker = document.getElementById("pg-model");
  const help = document.getElementById("pg-model-help");
  const log = document.getElementById("pg-log");
  const meta = document.getElementById("pg-meta");
  const send = document.getElementById("pg-send");
  const stop = document.getElementById("pg-stop");
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const picked = {};
  let history = [];
  let controller = null;
  const SHOWN_VALUES = 5;
  const RECORD_TRIES = 40;
  const RECORD_WAIT_MS = 500;

  const mode = () => form.elements.mode.value;
  const choices = (name) => document.getElementById(`pg-choices-${name}`);
  const label = (name) => form.querySelector(`input[name="mode"][value="${name}"]`).parentElement.textContent.trim();
  const runs = (name) => choices(name).dataset.runs === "true";

  // The mode's models in the picker (the one picked before in that mode again), its help, its
  // fields alone shown and sent.
  function show(name) {
    const content = choices(name).content.cloneNode(true);
    picker.replaceChildren(...content.querySelectorAll("optgroup"));
    if (picked[name]) picker.value = picked[name];
    help.replaceChildren(...content.querySelector(".help").childNodes);
    for (const field of form.querySelectorAll("[data-modes]")) {
      field.hidden = !field.dataset.modes.split(" ").includes(name);
      for (const control of field.querySelectorAll("input, textarea")) control.disabled = field.hidden;
    }
    send.disabled = controller !== null || !runs(name);
  }

  function entry(kind, who) {
    document.getElementById("pg-empty")?.remove();
    const item = document.createElement("div");
    item.className = `msg ${kind}`;
    const name = document.createElement("span");
    name.className = "who";
    name.textContent = who;
    item.append(name);
    log.append(item);
    return item;
  }

  function bubble(kind, who, text) {
    const body = document.createElement("div");
    body.className = "body";
    body.textContent = text;
    entry(kind, who).append(body);
    log.scrollTop = log.scrollHeight;
    return body;
  }

  // A refusal or a stream's error, in OpenAI's shape ({error: {message, type, code}}) or
  // Anthropic's ({type: "error", error: {type, message}}): its message, and what kind it is.
  function refusal(error, status) {
    const failed = new Error(error?.message || `HTTP ${status}`);
    const code = typeof error?.code === "string" ? error.code : error?.type;
    failed.kind = [status && `HTTP ${status}`, code].filter(Boolean).join(" · ");
    return failed;
  }

  function showFailure(error) {
    if (meta.textContent.startsWith("Waiting")) meta.textContent = "";
    if (error.name !== "AbortError") bubble("error", error.kind ? `Error · ${error.kind}` : "Error", error.message);
  }

  async function post(name, body) {
    const response = await fetch(choices(name).dataset.endpoint, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify(body),
      signal: controller.signal,
    });
    if (!response.ok) {
      const failure = await response.json().catch(() => ({}));
      throw refusal(failure.error, response.status);
    }
    meta.textContent = `${response.headers.get("X-Momor-Model") || body.model} via ${response.headers.get("X-Momor-Provider") || "?"}`;
    return response;
  }

  // Each server-sent event of a response: its name (if it has one) and its data.
  async function* serverEvents(response) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const lines = buffer.slice(0, cut).split("\n");
        buffer = buffer.slice(cut + 2);
        const name = lines.find((line) => line.startsWith("event:"))?.slice(6).trim();
        const data = lines.filter((line) => line.startsWith("data:")).map((line) => line.slice(5).trim()).join("\n");
        if (data) yield { name, data };
      }
    }
  }

  // The streaming APIs: the body of a call, what one event says (text to show, usage, the
  // end; an error is thrown) and the tokens in and out its usage counts.
  const STREAMS = {
    chat: {
      body: (model, turns, system) => ({
        model,
        messages: system ? [{ role: "system", content: system }, ...turns] : turns,
        stream: true,
        stream_options: { include_usage: true },
      }),
      read(event) {
        if (event.data === "[DONE]") return { done: true };
        const chunk = JSON.parse(event.data);
        if (chunk.error) throw refusal(chunk.error);
        return { text: chunk.choices?.[0]?.delta?.content, usage: chunk.usage };
      },
      tokens: (usage) => [usage.prompt_tokens ?? 0, usage.completion_tokens ?? 0],
    },
    messages: {
      body: (model, turns, system) => ({
        model,
        max_tokens: Number(form.elements.max_tokens.value),
        ...(system ? { system } : {}),
        messages: turns,
        stream: true,
      }),
      read(event) {
        const data = JSON.parse(event.data);
        if (data.type === "error") throw refusal(data.error);
        if (data.type === "message_start") return { usage: data.message.usage };
        if (data.type === "content_block_delta" && data.delta.type === "text_delta") return { text: data.delta.text };
        if (data.type === "message_delta") return { usage: data.usage };
        return { done: data.type === "message_stop" };
      },
      tokens: (usage) => [
        (usage.input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0),
        usage.output_tokens ?? 0,
      ],
    },
  };

  function seconds(ms) {
    return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
  }

  // What one answer took, under it: its tokens, its cost (the usage of Chat Completions and
  // embeddings answers says it; a Messages answer's does not, so it is read from the call's
  // record once written), how long it took (the first token's wait as well) and its request id.
  function answerFacts(item, { tokens, cost, requestId, started, firstAt }) {
    const facts = document.createElement("div");
    facts.className = "reply-facts";
    const parts = [];
    if (tokens) parts.push(tokens);
    if (cost !== undefined) parts.push(Momor.usd(cost));
    else if (requestId) parts.push(recordedCost(requestId));
    const total = performance.now() - started;
    parts.push(firstAt ? `${seconds(total)} (first token ${seconds(firstAt - started)})` : seconds(total));
    if (requestId) parts.push(recordLink(requestId));
    parts.forEach((part, n) => facts.append(...(n ? [" · ", part] : [part])));
    item.append(facts);
  }

  function recordLink(requestId) {
    const link = document.createElement("a");
    link.className = "request-id";
    link.href = `${form.dataset.records}${encodeURIComponent(requestId)}/`;
    link.title = "The call's record";
    link.textContent = requestId;
    return link;
  }

  // The cost on the call's record: asked for until the record is written (within a second or so
  // of the answer), then shown in place.
  function recordedCost(requestId) {
    const slot = document.createElement("span");
    slot.className = "cost";
    slot.textContent = "cost being recorded…";
    (async () => {
      const url = `${form.dataset.record}?id=${encodeURIComponent(requestId)}`;
      for (let n = 0; n < RECORD_TRIES; n++) {
        const response = await fetch(url, { credentials: "same-origin" }).catch(() => null);
        if (response?.ok) {
          slot.textContent = Momor.usd((await response.json()).data.cost);
          return;
        }
        if (response?.status !== 404) break;
        await new Promise((done) => setTimeout(done, RECORD_WAIT_MS));
      }
      slot.textContent = "cost on the record";
    })();
    return slot;
  }

  async function converse(name, text) {
    const api = STREAMS[name];
    const system = form.elements.system.value.trim();
    const body = api.body(picker.value, [...history, { role: "user", content: text }], system);
    bubble("user", "You", text);
    const answer = bubble("assistant", `Assistant · ${label(name)}`, "");
    answer.classList.add("streaming");
    meta.textContent = "Waiting for the first token…";
    const reply = { started: performance.now(), firstAt: null };
    const usage = {};
    let failed = false;
    try {
      const response = await post(name, body);
      reply.requestId = response.headers.get("X-Momor-Request-Id");
      for await (const event of serverEvents(response)) {
        const said = api.read(event);
        if (said.usage) Object.assign(usage, said.usage);
        if (said.text) {
          reply.firstAt ??= performance.now();
          answer.textContent += said.text;
          log.scrollTop = log.scrollHeight;
        }
        if (said.done) break;
      }
      history.push({ role: "user", content: text });
      if (answer.textContent) history.push({ role: "assistant", content: answer.textContent });
    } catch (error) {
      failed = true;
      if (!answer.textContent) answer.closest(".msg").remove();
      showFailure(error);
    } finally {
      answer.classList.remove("streaming");
      if (answer.isConnected) {
        answer.closest(".msg").dataset.done = "true";
        if (Object.keys(usage).length) reply.tokens = `${api.tokens(usage).join(" → ")} tokens`;
        if (!failed || answer.textContent) answerFacts(answer.closest(".msg"), { ...reply, cost: usage.cost });
      }
    }
  }

  function vectorItem(input, vector) {
    const item = document.createElement("li");
    const text = document.createElement("span");
    text.className = "input";
    text.textContent = input;
    const size = document.createElement("span");
    size.className = "dimensions";
    size.textContent = `${vector.length} dimensions`;
    const values = document.createElement("code");
    values.className = "values";
    const shown = vector.slice(0, SHOWN_VALUES).map((value) => value.toFixed(4));
    values.textContent = `[${shown.join(", ")}${vector.length > SHOWN_VALUES ? ", …" : ""}]`;
    item.append(text, size, values);
    return item;
  }

  async function embed(name, inputs) {
    meta.textContent = "Waiting for the vectors…";
    const started = performance.now();
    try {
      const response = await post(name, { model: picker.value, input: inputs });
      const answer = await response.json();
      const item = entry("assistant embeddings", `Embeddings · ${answer.model}`);
      const list = document.createElement("ol");
      list.className = "body vectors";
      for (const { index, embedding } of [...answer.data].sort((a, b) => a.index - b.index)) {
        list.append(vectorItem(inputs[index], embedding));
      }
      item.append(list);
      item.dataset.done = "true";
      const requestId = response.headers.get("X-Momor-Request-Id");
      const { prompt_tokens: tokens, cost } = answer.usage;
      answerFacts(item, { tokens: `${tokens} tokens`, cost, requestId, started });
      log.scrollTop = log.scrollHeight;
    } catch (error) {
      showFailure(error);
    }
  }

  async function run(work) {
    controller = new AbortController();
    send.disabled = true;
    stop.disabled = false;
    try {
      await work();
    } finally {
      controller = null;
      stop.disabled = true;
      send.disabled = !runs(mode());
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (controller) return;
    const name = mode();
    if (name === "embeddings") {
      const inputs = form.elements.inputs.value.split("\n").map((line) => line.trim()).filter(Boolean);
      if (inputs.length) run(() => embed(name, inputs));
      return;
    }
    const text = form.elements.message.value.trim();
    if (!text) return;
    form.elements.message.value = "";
    run(() => converse(name, text));
  });
  for (const field of [form.elements.message, form.elements.inputs]) {
    field.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) form.requestSubmit();
    });
  }
  for (const radio of form.elements.mode) radio.addEventListener("change", () => show(mode()));
  picker.addEventListener("change", () => { picked[mode()] = picker.value; });
  stop.addEventListener("click", () => controller?.abort());
  document.getElementById("pg-clear").addEventListener("click", () => {
    history = [];
    log.replaceChildren();
    meta.textContent = "";
  });
  show(mode());
})();
