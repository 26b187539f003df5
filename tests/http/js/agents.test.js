// Agent frameworks, unmodified, against a real vkstreamd --http serving a tiny random-weight model
// with the Qwen2.5 vocabulary and chat template (tools included): the Vercel AI SDK
// (generateText / streamText with a tool, structured output, through @ai-sdk/openai-compatible),
// LangChain's ChatOpenAI (bindTools, streamed tool-call chunks, withStructuredOutput by function
// calling and by JSON schema) and the OpenAI
// Agents SDK (an agent with one function tool run to completion over /v1/responses and over chat
// completions, whole and streamed). Each does what a user does. The model's text is gibberish, so
// the checks are on structure: a forced call (tool_choice required / a named tool) is guaranteed
// by the grammar, and its arguments must validate against the tool's schema.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { z } from "zod";
import OpenAI from "openai";
import { generateText, streamText, tool as aiTool, stepCountIs, Output } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { ChatOpenAI } from "@langchain/openai";
import { HumanMessage, ToolMessage } from "@langchain/core/messages";
import { tool as lcTool } from "@langchain/core/tools";
import {
  Agent, run, tool as agentTool, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled,
} from "@openai/agents";
import { makeChatModel, startDaemon } from "./daemon.js";

const MODEL = "qwen-agents";
const weatherInput = z.object({ city: z.enum(["Paris", "Rome"]), days: z.number().int().min(1).max(9) });
let server;
let calls = [];  // what the tools' execute functions received

function checkArguments(args) {
  assert.deepEqual(Object.keys(args), ["city", "days"]);  // the schema's order, nothing else
  assert.ok(["Paris", "Rome"].includes(args.city), JSON.stringify(args));
  assert.ok(Number.isInteger(args.days) && args.days >= 1 && args.days <= 9, JSON.stringify(args));
}

function weather({ city, days }) {
  calls.push({ city, days });
  return `${city}: sunny for ${days} days`;
}

before(async () => {
  server = await startDaemon("vks-http-agents-", (dir) => makeChatModel(dir, MODEL));
});

after(async () => { await server?.stop(); });

// ---- Vercel AI SDK ----

function aiModel() {
  const provider = createOpenAICompatible({ name: "vkstream", baseURL: `${server.baseUrl}/v1`, apiKey: "unused", includeUsage: true });
  return provider.chatModel(MODEL);
}
// One call per turn: a random model allowed parallel calls goes on calling until max_tokens. The
// provider passes options it does not know into the request body, as a user sets any field.
const oneCall = { vkstream: { parallel_tool_calls: false } };
const aiTools = () => ({
  get_weather: aiTool({ description: "Weather in a city", inputSchema: weatherInput, execute: async (input) => weather(input) }),
});

test("ai sdk: generateText with a required tool runs it, then answers with tools off", async () => {
  calls = [];
  const r = await generateText({
    model: aiModel(), tools: aiTools(), toolChoice: "required", prompt: "Weather in Paris for two days?",
    temperature: 0, seed: 3, maxOutputTokens: 60, maxRetries: 0, providerOptions: oneCall,
    stopWhen: stepCountIs(2),
    prepareStep: ({ stepNumber }) => (stepNumber === 1 ? { toolChoice: "none" } : {}),
  });
  assert.equal(r.steps.length, 2);
  const first = r.steps[0];
  assert.equal(first.finishReason, "tool-calls");
  assert.equal(first.toolCalls.length, 1);
  assert.equal(first.toolCalls[0].toolName, "get_weather");
  checkArguments(first.toolCalls[0].input);
  assert.deepEqual(calls, [first.toolCalls[0].input]);
  assert.equal(first.toolResults[0].output, weather(first.toolCalls[0].input));
  assert.ok(first.usage.inputTokens > 0 && first.usage.outputTokens > 0);
  assert.ok(["stop", "length"].includes(r.steps[1].finishReason));
  assert.equal(r.steps[1].toolCalls.length, 0);
  // The second request carried the call and its result (rendered by the template), and was answered.
  assert.deepEqual(r.steps[0].content.map((p) => p.type), ["tool-call", "tool-result"]);
  assert.ok(r.steps[1].usage.inputTokens > 0);
  assert.equal(typeof r.text, "string");
});

test("ai sdk: streamText with a required tool streams the call and its result", async () => {
  calls = [];
  const r = streamText({
    model: aiModel(), tools: aiTools(), toolChoice: "required", prompt: "Weather in Rome?",
    temperature: 0, seed: 3, maxOutputTokens: 60, maxRetries: 0, providerOptions: oneCall,
  });
  const parts = [];
  for await (const part of r.fullStream) parts.push(part);
  const types = parts.map((p) => p.type);
  assert.ok(!types.includes("error"), JSON.stringify(parts.filter((p) => p.type === "error")));
  const call = parts.find((p) => p.type === "tool-call");
  assert.ok(call, types.join(","));
  checkArguments(call.input);
  const result = parts.find((p) => p.type === "tool-result");
  assert.equal(result.output, weather(call.input));
  assert.equal(await r.finishReason, "tool-calls");
  const usage = await r.usage;
  assert.ok(usage.inputTokens > 0 && usage.outputTokens > 0);
  // The streamed input deltas rebuild the call's arguments.
  const deltas = parts.filter((p) => p.type === "tool-input-delta").map((p) => p.delta).join("");
  assert.deepEqual(JSON.parse(deltas), call.input);
});

test("ai sdk: structured output (Output.object) through response_format json_schema", async () => {
  const provider = createOpenAICompatible({
    name: "vkstream", baseURL: `${server.baseUrl}/v1`, apiKey: "unused", supportsStructuredOutputs: true,
  });
  const r = await generateText({
    model: provider.chatModel(MODEL), output: Output.object({ schema: weatherInput }), prompt: "Weather in Rome?",
    temperature: 0, maxOutputTokens: 60, maxRetries: 0,
  });
  checkArguments(r.output);
  assert.equal(r.finishReason, "stop");
});

// ---- LangChain ----

function lcModel(extra = {}) {
  return new ChatOpenAI({
    model: MODEL, apiKey: "unused", configuration: { baseURL: `${server.baseUrl}/v1` }, temperature: 0, maxTokens: 60,
    maxRetries: 0, ...extra,
  });
}
const lcWeather = lcTool(async (input) => weather(input), {
  name: "get_weather", description: "Weather in a city", schema: weatherInput,
});

test("langchain: bindTools with tool_choice any returns tool_calls; the ToolMessage round trip is accepted", async () => {
  const model = lcModel().bindTools([lcWeather], { tool_choice: "any", parallel_tool_calls: false });
  const question = new HumanMessage("Weather in Paris for two days?");
  const ai = await model.invoke([question]);
  assert.equal(ai.tool_calls.length, 1);
  assert.equal(ai.tool_calls[0].name, "get_weather");
  checkArguments(ai.tool_calls[0].args);
  assert.ok(ai.tool_calls[0].id);
  assert.equal(ai.response_metadata.finish_reason, "tool_calls");
  assert.ok(ai.usage_metadata.input_tokens > 0);
  const result = await lcWeather.invoke(ai.tool_calls[0]);
  assert.ok(result instanceof ToolMessage);
  const next = await lcModel().bindTools([lcWeather]).invoke([question, ai, result]);
  assert.ok(next.usage_metadata.input_tokens > ai.usage_metadata.input_tokens);
});

test("langchain: streamed chunks concatenate to the same tool call", async () => {
  const model = lcModel().bindTools([lcWeather], { tool_choice: "get_weather", parallel_tool_calls: false });
  const whole = await model.invoke("Weather in Rome?");
  let merged;
  for await (const chunk of await model.stream("Weather in Rome?")) merged = merged ? merged.concat(chunk) : chunk;
  assert.equal(merged.tool_calls.length, 1);
  assert.deepEqual(merged.tool_calls.map((c) => [c.name, c.args]), whole.tool_calls.map((c) => [c.name, c.args]));
  checkArguments(merged.tool_calls[0].args);
});

test("langchain: withStructuredOutput by function calling and by JSON schema give valid objects", async () => {
  const byCall = lcModel().withStructuredOutput(weatherInput, { name: "weather_query", method: "functionCalling" });
  checkArguments(await byCall.invoke("Paris, three days"));
  checkArguments(await lcModel().withStructuredOutput(weatherInput).invoke("Paris, three days"));  // the default: json_schema
});

// ---- OpenAI Agents SDK ----

const agentWeather = agentTool({
  name: "get_weather", description: "Weather in a city", parameters: weatherInput, execute: async (input) => weather(input),
});

const verdict = z.object({ sunny: z.boolean() });

function weatherAgent() {
  // toolChoice required forces the first turn's call; the SDK resets it to auto after a tool ran
  // (resetToolChoice), and the second turn gives the final answer. A random model never stops on
  // its own, and a turn cut by max tokens is an incomplete response, which fails the run; a
  // structured final answer (outputType: text.format / response_format) is grammar-bound and ends.
  return new Agent({
    name: "Weather", instructions: "Answer weather questions with the tool.", model: MODEL, tools: [agentWeather],
    outputType: verdict,
    modelSettings: { toolChoice: "required", temperature: 0, maxTokens: 100, parallelToolCalls: false },
  });
}

for (const api of ["responses", "chat_completions"]) {
  test(`openai agents (${api}): an agent with a function tool runs to completion, whole and streamed`, async () => {
    setTracingDisabled(true);
    setDefaultOpenAIClient(new OpenAI({ baseURL: `${server.baseUrl}/v1`, apiKey: "unused", maxRetries: 0 }));
    setOpenAIAPI(api);
    for (const stream of [false, true]) {
      calls = [];
      const result = await run(weatherAgent(), "Weather in Paris for two days?", { stream, maxTurns: 3 });
      if (stream) {
        let events = 0;
        for await (const _ of result) events += 1;  // eslint-disable-line no-unused-vars
        await result.completed;
        assert.ok(events > 0);
      }
      const items = result.newItems.map((i) => i.type);
      assert.deepEqual(items.slice(0, 2), ["tool_call_item", "tool_call_output_item"], items.join(","));
      assert.equal(items.at(-1), "message_output_item", items.join(","));
      assert.equal(calls.length, 1);
      checkArguments(calls[0]);
      assert.equal(result.newItems[1].output, weather(calls[0]));
      assert.equal(typeof result.finalOutput.sunny, "boolean", JSON.stringify(result.finalOutput));
      assert.equal(result.rawResponses.length, 2);
      assert.ok(result.state.usage.inputTokens > 0 && result.state.usage.outputTokens > 0);
    }
  });
}
