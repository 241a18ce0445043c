// The Vercel AI SDK's Anthropic provider against the gateway. Takes one JSON argument,
// {baseURL, apiKey, steps: [{op, model, prompt, tools?, results?}]}, runs the steps in order and
// prints one JSON list on stdout: each step's outcome, {error: ...} in its place when the SDK
// throws. The ops: generate (generateText), stream (streamText, its text read as it arrives),
// tools and stream_tools (generateText and streamText with `tools`, each executed with
// results[name] as its output, for two steps at most).
import { generateText, isStepCount, jsonSchema, streamText, tool } from 'ai';
import { createAnthropic } from '@ai-sdk/anthropic';

const { baseURL, apiKey, steps } = JSON.parse(process.argv[2]);
const anthropic = createAnthropic({ baseURL, apiKey });

function settings(step) {
  return { model: anthropic(step.model), prompt: step.prompt, maxRetries: 0 };
}

function withTools(step, executed) {
  const tools = Object.fromEntries(
    Object.entries(step.tools).map(([name, { description, inputSchema }]) => [
      name,
      tool({
        description,
        inputSchema: jsonSchema(inputSchema),
        execute: async (input) => {
          executed.push({ name, input });
          return step.results[name];
        },
      }),
    ]),
  );
  return { ...settings(step), tools, stopWhen: isStepCount(2) };
}

function stepOf({ text, finishReason, toolCalls, toolResults }) {
  return {
    text,
    finishReason,
    toolCalls: toolCalls.map(({ toolCallId, toolName, input }) => ({
      toolCallId,
      toolName,
      input,
    })),
    toolResults: toolResults.map(({ toolCallId, toolName, output }) => ({
      toolCallId,
      toolName,
      output,
    })),
  };
}

function outcomeOf({ text, finishReason, usage, response, steps }) {
  return {
    text,
    finishReason,
    usage,
    responseId: response.id,
    modelId: response.modelId,
    requestId: response.headers?.['x-momor-request-id'] ?? null,
    steps: steps.map(stepOf),
  };
}

async function read(result) {
  const deltas = [];
  for await (const delta of result.textStream) deltas.push(delta);
  const [text, finishReason, usage, response, steps] = await Promise.all([
    result.text,
    result.finishReason,
    result.usage,
    result.response,
    result.steps,
  ]);
  return { deltas, ...outcomeOf({ text, finishReason, usage, response, steps }) };
}

async function generate(step) {
  return outcomeOf(await generateText(settings(step)));
}

async function stream(step) {
  return read(streamText(settings(step)));
}

async function tools(step) {
  const executed = [];
  const result = await generateText(withTools(step, executed));
  return { ...outcomeOf(result), executed };
}

async function streamTools(step) {
  const executed = [];
  const result = await read(streamText(withTools(step, executed)));
  return { ...result, executed };
}

const OPS = { generate, stream, tools, stream_tools: streamTools };

async function outcome(step) {
  try {
    return await OPS[step.op](step);
  } catch (error) {
    const { name, message, statusCode } = error;
    return { error: { name, message, status: statusCode ?? null } };
  }
}

const outcomes = [];
for (const step of steps) outcomes.push(await outcome(step));
process.stdout.write(JSON.stringify(outcomes));
