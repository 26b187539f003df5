// Tool calling through the official `openai` and `ollama` npm packages, unmodified, against a real
// vkstreamd --http serving a tiny random-weight model with the Qwen2.5 vocabulary and chat
// template (made by vks-make-model; its text is gibberish, so only structure is checked): a
// required call comes back as message.tool_calls whose arguments validate, the SDK's own stream
// accumulator (chat.completions.stream) rebuilds the same calls from the deltas, a tool
// result in the history is accepted, ollama.chat returns calls with object arguments, and
// Anthropic's SDK gets tool_use blocks from /v1/messages, whole and through its stream helper;
// count_tokens agrees with the prompt a Messages request is charged; llama.cpp's /tokenize,
// /detokenize and /apply-template agree with each other and with a chat request's prompt.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { Ollama } from "ollama";
import Anthropic from "@anthropic-ai/sdk";

import { makeChatModel, startDaemon } from "./daemon.js";

const tools = [{
  type: "function",
  function: {
    name: "get_weather",
    description: "Weather in a city",
    parameters: {
      type: "object",
      properties: { city: { enum: ["Paris", "Rome"] }, days: { type: "integer", minimum: 1, maximum: 9 } },
      required: ["city", "days"],
      additionalProperties: false,
    },
  },
}];
const messages = [{ role: "user", content: "Weather in Paris for two days?" }];

let server;
let baseUrl;
let openai;
let ollama;
let anthropic;

function checkArguments(args) {
  assert.deepEqual(Object.keys(args), ["city", "days"]);  // declared order, nothing else
  assert.ok(["Paris", "Rome"].includes(args.city));
  assert.ok(Number.isInteger(args.days) && args.days >= 1 && args.days <= 9);
}

before(async () => {
  server = await startDaemon("vks-http-tools-", (dir) => makeChatModel(dir, "qwen-tools"));
  ({ baseUrl } = server);
  openai = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: "unused-on-loopback", maxRetries: 0 });
  ollama = new Ollama({ host: baseUrl });
  anthropic = new Anthropic({ baseURL: baseUrl, apiKey: "unused-on-loopback", maxRetries: 0 });
});

after(async () => {
  await server?.stop();
});

// One call per turn: with parallel calls a random model goes on calling until max_tokens.
const request = {
  model: "qwen-tools", messages, tools, tool_choice: "required", parallel_tool_calls: false, seed: 11, temperature: 1, max_tokens: 120,
};

test("openai: a required call comes back as message.tool_calls that validate", async () => {
  const c = await openai.chat.completions.create(request);
  const choice = c.choices[0];
  assert.equal(choice.finish_reason, "tool_calls");
  assert.equal(choice.message.content, null);
  assert.ok(choice.message.tool_calls.length >= 1);
  for (const call of choice.message.tool_calls) {
    assert.equal(call.type, "function");
    assert.equal(call.function.name, "get_weather");
    checkArguments(JSON.parse(call.function.arguments));
  }
});

test("openai: the SDK's stream accumulator rebuilds the same calls from the deltas", async () => {
  const whole = await openai.chat.completions.create(request);
  const stream = openai.chat.completions.stream({ ...request, stream: true });
  let argumentPieces = 0;  // the arguments arrive in fragments as they are generated
  stream.on("chunk", (chunk) => {
    for (const t of chunk.choices[0]?.delta?.tool_calls ?? []) if (t.index === 0 && t.function?.arguments) argumentPieces += 1;
  });
  const final = await stream.finalChatCompletion();
  const streamed = final.choices[0];
  assert.equal(streamed.finish_reason, "tool_calls");
  assert.ok(argumentPieces > 1, `arguments in ${argumentPieces} piece(s)`);
  assert.deepEqual(streamed.message.tool_calls.map((t) => t.function), whole.choices[0].message.tool_calls.map((t) => t.function));
});

test("openai: a tool result in the history is accepted", async () => {
  const first = await openai.chat.completions.create(request);
  const call = first.choices[0].message.tool_calls[0];
  const next = await openai.chat.completions.create({
    model: "qwen-tools", tools, max_tokens: 8, temperature: 0,
    messages: [...messages, first.choices[0].message, { role: "tool", tool_call_id: call.id, content: "Sunny, 24 C" }],
  });
  assert.ok(["stop", "length", "tool_calls"].includes(next.choices[0].finish_reason));
  assert.ok(next.usage.prompt_tokens > first.usage.prompt_tokens);
});

test("ollama: chat with tools returns calls with object arguments", async () => {
  const r = await ollama.chat({
    model: "qwen-tools", messages, tools, tool_choice: "required", parallel_tool_calls: false, options: { seed: 4, temperature: 1, num_predict: 120 },
  });
  assert.ok(r.message.tool_calls.length >= 1);
  for (const call of r.message.tool_calls) {
    assert.equal(call.function.name, "get_weather");
    checkArguments(call.function.arguments);
  }
});

test("anthropic: messages with tool_choice any give tool_use blocks, whole and streamed", async () => {
  const params = {
    model: "qwen-tools", max_tokens: 120, temperature: 0, system: "You call tools.", messages,
    tools: tools.map((t) => ({ name: t.function.name, description: t.function.description, input_schema: t.function.parameters })),
    tool_choice: { type: "any", disable_parallel_tool_use: true },
  };
  const whole = await anthropic.messages.create(params);
  assert.equal(whole.stop_reason, "tool_use");
  const uses = whole.content.filter((b) => b.type === "tool_use");
  assert.equal(uses.length, 1);
  assert.equal(uses[0].name, "get_weather");
  checkArguments(uses[0].input);
  assert.match(uses[0].id, /^toolu_\S+_0$/);  // docs/HTTP.md: toolu_<id>_<i>
  const streamed = await anthropic.messages.stream(params).finalMessage();
  assert.equal(streamed.stop_reason, "tool_use");
  assert.match(streamed.content.find((b) => b.type === "tool_use").id, /^toolu_\S+_0$/);
  assert.deepEqual(streamed.content.filter((b) => b.type === "tool_use").map((b) => [b.name, b.input]),
    uses.map((b) => [b.name, b.input]));
});

test("openai: responses.create and responses.stream give the same function_call", async () => {
  const params = {
    model: "qwen-tools", instructions: "Call a tool.", input: "Weather in Paris?", temperature: 0, max_output_tokens: 120,
    tools: tools.map((t) => ({ type: "function", name: t.function.name, parameters: t.function.parameters, strict: true })),
    tool_choice: "required", parallel_tool_calls: false,
  };
  const whole = await openai.responses.create(params);
  assert.equal(whole.status, "completed");
  const calls = whole.output.filter((o) => o.type === "function_call");
  assert.equal(calls.length, 1);
  checkArguments(JSON.parse(calls[0].arguments));
  // The arguments stream as they are generated: several deltas that join to the final arguments.
  const stream = openai.responses.stream(params);
  const deltas = [];
  stream.on("response.function_call_arguments.delta", (e) => deltas.push(e.delta));
  const streamed = await stream.finalResponse();
  assert.deepEqual(streamed.output.filter((o) => o.type === "function_call").map((o) => [o.name, o.arguments]),
    calls.map((o) => [o.name, o.arguments]));
  assert.ok(deltas.length > 1, `one delta: ${JSON.stringify(deltas)}`);
  assert.equal(deltas.join(""), calls[0].arguments);
});

const anthropicParams = {
  model: "qwen-tools", system: "You call tools.", messages,
  tools: tools.map((t) => ({ name: t.function.name, description: t.function.description, input_schema: t.function.parameters })),
};

test("anthropic: count_tokens equals the input tokens the same request is charged", async () => {
  const counted = await anthropic.messages.countTokens(anthropicParams);
  const answered = await anthropic.messages.create({ ...anthropicParams, max_tokens: 2, temperature: 0 });
  assert.equal(counted.input_tokens, answered.usage.input_tokens);
  const bare = await anthropic.messages.countTokens({ model: "qwen-tools", messages });
  assert.ok(bare.input_tokens > 0 && bare.input_tokens < counted.input_tokens);  // no tools, no system
  await assert.rejects(anthropic.messages.countTokens({ model: "qwen-tools", messages: [] }),
    (e) => e.status === 400 && /messages/.test(e.message));
});

async function post(path, body) {
  const r = await fetch(`${baseUrl}${path}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

test("tokenize, detokenize and apply-template agree with each other and with chat", async () => {
  const text = "Weather in Paris, 24 °C?";
  const t = await post("/tokenize", { content: text });
  assert.equal(t.status, 200);
  assert.ok(t.body.tokens.length > 3 && t.body.tokens.every(Number.isInteger));
  assert.deepEqual((await post("/detokenize", { tokens: t.body.tokens })).body, { content: text });
  const pieces = await post("/tokenize", { content: text, with_pieces: true });
  assert.deepEqual(pieces.body.tokens.map((p) => p.id), t.body.tokens);
  // "°" is two bytes that byte-level BPE may split: a piece is text or its bytes, and together they are the text.
  const bytes = pieces.body.tokens.flatMap((p) => (typeof p.piece === "string" ? [...Buffer.from(p.piece)] : p.piece));
  assert.equal(Buffer.from(bytes).toString(), text);
  // Control-token text is the control token unless parse_special is false.
  assert.equal((await post("/tokenize", { content: "<|im_end|>" })).body.tokens.length, 1);
  assert.ok((await post("/tokenize", { content: "<|im_end|>", parse_special: false })).body.tokens.length > 1);

  const applied = await post("/apply-template", { messages, tools });
  assert.equal(applied.status, 200);
  assert.ok(applied.body.prompt.includes("<|im_start|>user\nWeather in Paris for two days?<|im_end|>"));
  assert.ok(applied.body.prompt.includes('"name": "get_weather"'));  // the tools, rendered by the template
  assert.ok(applied.body.prompt.endsWith("<|im_start|>assistant\n"));
  const chat = await openai.chat.completions.create({ model: "qwen-tools", messages, tools, max_tokens: 1 });
  assert.equal((await post("/tokenize", { content: applied.body.prompt })).body.tokens.length, chat.usage.prompt_tokens);

  const bad = await post("/detokenize", { tokens: [1, -4] });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.param, "tokens.1");
  assert.equal((await post("/tokenize", { text })).status, 400);  // content is the field
  assert.equal((await post("/apply-template", { messages: [{ role: "wizard", content: "hi" }] })).status, 400);
});

test("think on a model whose template does not think is refused (Ollama, Anthropic)", async () => {
  await assert.rejects(ollama.chat({ model: "qwen-tools", messages, think: true, stream: false }),
    (e) => e.status_code === 400 && /does not support thinking/.test(e.error));
  await assert.rejects(anthropic.messages.create({ ...anthropicParams, max_tokens: 4, thinking: { type: "enabled", budget_tokens: 1024 } }),
    (e) => e.status === 400 && /does not support thinking/.test(e.message));
  const show = await ollama.show({ model: "qwen-tools" });
  assert.ok(!show.capabilities.includes("thinking"));
  assert.ok(show.capabilities.includes("tools"));
});
