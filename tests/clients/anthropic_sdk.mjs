// Anthropic's TypeScript SDK against the gateway. Takes one JSON argument,
// {baseURL, apiKey, steps: [{op, params, apiKey?, results?, stream?}]}, runs the steps in order
// and prints one JSON list on stdout: each step's outcome, {error: ...} in place of what it would
// return when the SDK throws. The ops: create (messages.create), stream (messages.stream), count
// (messages.countTokens), tool_loop (messages.create, or with `stream` messages.stream's final
// message, until the answer stops for something other than tool_use, each tool_use answered with
// results[name] as its tool_result).
import * as sdk from '@anthropic-ai/sdk';

const MAX_TURNS = 4;
const { baseURL, apiKey, steps } = JSON.parse(process.argv[2]);

function client(step) {
  return new sdk.Anthropic({ baseURL, apiKey: step.apiKey ?? apiKey, maxRetries: 0 });
}

function momorId(response) {
  return response?.headers.get('x-momor-request-id') ?? null;
}

function described(error) {
  const classes = Object.keys(sdk).filter(
    (name) => name.endsWith('Error') && error instanceof sdk[name],
  );
  return {
    name: error.constructor.name,
    classes: classes.sort(),
    status: error.status ?? null,
    type: error.type ?? null,
    message: error.apiMessage ?? error.message,
    body: error.error ?? null,
    request_id: momorId(error),
    retry_after: error.headers?.get('retry-after') ?? null,
  };
}

async function create(step) {
  const { data, response } = await client(step).messages.create(step.params).withResponse();
  return { message: data, request_id: momorId(response) };
}

async function stream(step) {
  const seen = { texts: [], events: [] };
  const events = client(step).messages.stream(step.params);
  events.on('text', (delta) => seen.texts.push(delta));
  events.on('streamEvent', (event) => seen.events.push(event.type));
  try {
    const message = await events.finalMessage();
    return { ...seen, message, request_id: momorId(events.response) };
  } catch (error) {
    return { ...seen, error: described(error) };
  }
}

async function count(step) {
  return client(step).messages.countTokens(step.params);
}

function toolResults(message, results) {
  return message.content
    .filter((block) => block.type === 'tool_use')
    .map((use) => ({ type: 'tool_result', tool_use_id: use.id, content: results[use.name] }));
}

function answer(sdkClient, params, streamed) {
  const messages = sdkClient.messages;
  return streamed ? messages.stream(params).finalMessage() : messages.create(params);
}

async function toolLoop(step) {
  const sdkClient = client(step);
  const messages = [...step.params.messages];
  const replies = [];
  for (let turn = 0; turn < MAX_TURNS; turn += 1) {
    const reply = await answer(sdkClient, { ...step.params, messages }, step.stream);
    replies.push(reply);
    if (reply.stop_reason !== 'tool_use') break;
    messages.push({ role: 'assistant', content: reply.content });
    messages.push({ role: 'user', content: toolResults(reply, step.results) });
  }
  return { replies };
}

const OPS = { create, stream, count, tool_loop: toolLoop };

async function outcome(step) {
  try {
    return await OPS[step.op](step);
  } catch (error) {
    return { error: described(error) };
  }
}

const outcomes = [];
for (const step of steps) outcomes.push(await outcome(step));
process.stdout.write(JSON.stringify(outcomes));
