// Reasoning (<think>...</think>) split off the answer on every chat surface, through the official
// SDKs, unmodified, against vkstreamd --http serving a tiny random model (Qwen2.5 vocabulary) with
// a DeepSeek-R1-style fixture template: its generation prompt opens the block (`<think>\n`), with
// enable_thinking false it writes an empty block instead, as Qwen3's does, and it renders an
// assistant turn's reasoning_content given back. A random model
// never closes the block on its own, so its answer is all reasoning; a grammar forces the shape
// `reasoning</think>\n\nanswer` where the split itself is checked. The Vercel AI SDK reads the
// same reasoning_content as its reasoning parts.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import { Ollama } from "ollama";
import Anthropic from "@anthropic-ai/sdk";
import { generateText, streamText } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { makeChatModel, startDaemon } from "./daemon.js";

const MODEL = "qwen-thinks";
const TEMPLATE = [
  "{%- for m in messages %}<|im_start|>{{ m.role }}\n",
  "{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}{{ m.content }}<|im_end|>\n{% endfor -%}",
  "{%- if add_generation_prompt %}<|im_start|>assistant\n",
  "{%- if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% else %}<think>\n{% endif %}",
  "{%- endif %}",
].join("");
// Starts inside the block: reasoning, the close marker, the answer.
const SHAPE = 'root ::= [a-z]{2,8} " " [a-z]{2,8} "</think>" "\\n\\n" [a-z]{2,8} " " [a-z]{2,8}';

let server;
let openai;
let ollama;
let anthropic;
const messages = [{ role: "user", content: "Is it sunny in Paris?" }];

before(async () => {
  server = await startDaemon("vks-http-think-", (dir) => {
    writeFileSync(join(dir, "thinks.jinja"), TEMPLATE);
    return makeChatModel(dir, MODEL);
  }, (dir) => ["--chat-template", join(dir, "thinks.jinja")]);
  openai = new OpenAI({ baseURL: `${server.baseUrl}/v1`, apiKey: "unused", maxRetries: 0 });
  ollama = new Ollama({ host: server.baseUrl });
  anthropic = new Anthropic({ baseURL: server.baseUrl, apiKey: "unused", maxRetries: 0 });
});

after(async () => { await server?.stop(); });

test("openai chat: reasoning_content and content, whole and streamed deltas alike", async () => {
  const params = { model: MODEL, messages, temperature: 0, max_tokens: 60, grammar: SHAPE };
  const whole = await openai.chat.completions.create(params);
  const m = whole.choices[0].message;
  assert.match(m.reasoning_content, /^[a-z]+ [a-z]+$/);
  assert.match(m.content, /^[a-z]+ [a-z]+$/);
  assert.equal(whole.choices[0].finish_reason, "stop");
  // Tokens spent reasoning (counted per streamed event): some, not all of the answer's.
  const spent = whole.usage.completion_tokens_details.reasoning_tokens;
  assert.ok(spent > 0 && spent < whole.usage.completion_tokens, JSON.stringify(whole.usage));
  let reasoning = "";
  let content = "";
  for await (const chunk of await openai.chat.completions.create({ ...params, stream: true })) {
    const d = chunk.choices[0]?.delta ?? {};
    reasoning += d.reasoning_content ?? "";
    content += d.content ?? "";
  }
  assert.equal(reasoning, m.reasoning_content);
  assert.equal(content, m.content);
});

test("openai chat: enable_thinking false reaches the template; the answer is all content", async () => {
  const on = await openai.chat.completions.create({ model: MODEL, messages, temperature: 0, max_tokens: 8 });
  assert.ok(on.choices[0].message.reasoning_content.length > 0);
  assert.equal(on.choices[0].message.content, "");
  const off = await openai.chat.completions.create({
    model: MODEL, messages, temperature: 0, max_tokens: 8, chat_template_kwargs: { enable_thinking: false },
  });
  assert.equal(on.usage.completion_tokens_details.reasoning_tokens, on.usage.completion_tokens);  // never closed
  assert.equal(off.choices[0].message.reasoning_content, undefined);
  assert.equal(off.usage.completion_tokens_details.reasoning_tokens, 0);
  assert.ok(off.choices[0].message.content.length > 0);
  assert.ok(off.usage.prompt_tokens > on.usage.prompt_tokens);  // the empty block was rendered
  const none = await openai.chat.completions.create({ model: MODEL, messages, temperature: 0, max_tokens: 8, reasoning_effort: "none" });
  assert.equal(none.usage.prompt_tokens, off.usage.prompt_tokens);
  await assert.rejects(
    openai.chat.completions.create({ model: MODEL, messages, max_tokens: 8, chat_template_kwargs: { enable_thinking: "yes" } }),
    (e) => e.status === 400 && /enable_thinking/.test(e.message));
});

test("ollama: think true gives message.thinking, whole and streamed; think false switches it off", async () => {
  const options = { temperature: 0, num_predict: 8 };
  const on = await ollama.chat({ model: MODEL, messages, think: true, options });
  assert.ok(on.message.thinking.length > 0);
  assert.equal(on.message.content, "");
  let thinking = "";
  for await (const part of await ollama.chat({ model: MODEL, messages, think: true, options, stream: true })) {
    thinking += part.message.thinking ?? "";
  }
  assert.equal(thinking, on.message.thinking);
  const off = await ollama.chat({ model: MODEL, messages, think: false, options });
  assert.equal(off.message.thinking, undefined);
  assert.ok(off.message.content.length > 0);
  assert.ok(off.prompt_eval_count > on.prompt_eval_count);
  const show = await ollama.show({ model: MODEL });
  assert.ok(show.capabilities.includes("thinking"), JSON.stringify(show.capabilities));
});

test("anthropic: thinking blocks only when thinking is enabled, whole and streamed", async () => {
  const base = { model: MODEL, max_tokens: 8, temperature: 0, messages };
  const plain = await anthropic.messages.create(base);
  assert.deepEqual(plain.content.map((b) => b.type), ["text"]);  // thinking off: the template's empty block
  const params = { ...base, thinking: { type: "enabled", budget_tokens: 1024 } };
  const thought = await anthropic.messages.create(params);
  assert.equal(thought.content[0].type, "thinking");
  assert.ok(thought.content[0].thinking.length > 0);
  const streamed = await anthropic.messages.stream(params).finalMessage();
  assert.deepEqual(streamed.content.map((b) => [b.type, b.thinking ?? b.text]), thought.content.map((b) => [b.type, b.thinking ?? b.text]));
  assert.ok(plain.usage.input_tokens > thought.usage.input_tokens);
});

test("openai responses: a reasoning item before the message, whole and streamed", async () => {
  const params = { model: MODEL, input: "Is it sunny?", temperature: 0, max_output_tokens: 8, reasoning: { effort: "low" } };
  const whole = await openai.responses.create(params);
  assert.equal(whole.output[0].type, "reasoning");
  assert.equal(whole.usage.output_tokens_details.reasoning_tokens, whole.usage.output_tokens);  // all of it: never closed
  assert.ok(whole.output[0].content[0].text.length > 0);
  const stream = openai.responses.stream(params);
  let deltas = "";
  stream.on("response.reasoning_text.delta", (e) => { deltas += e.delta; });
  const final = await stream.finalResponse();
  assert.equal(deltas, whole.output[0].content[0].text);
  assert.deepEqual(final.output.map((o) => o.type), whole.output.map((o) => o.type));
});

test("ai sdk: generateText and streamText read reasoning_content as reasoning", async () => {
  const provider = createOpenAICompatible({ name: "vkstream", baseURL: `${server.baseUrl}/v1`, apiKey: "unused" });
  const settings = {
    model: provider.chatModel(MODEL), prompt: "Is it sunny in Paris?", temperature: 0, maxOutputTokens: 60, maxRetries: 0,
    providerOptions: { vkstream: { grammar: SHAPE } },  // passed into the body, as any field a user sets
  };
  const whole = await generateText(settings);
  assert.match(whole.reasoningText, /^[a-z]+ [a-z]+$/);
  assert.ok(whole.usage.outputTokenDetails.reasoningTokens > 0);
  assert.match(whole.text, /^[a-z]+ [a-z]+$/);
  const streamed = streamText(settings);
  let reasoning = "";
  for await (const part of streamed.fullStream) if (part.type === "reasoning-delta") reasoning += part.text;
  assert.equal(reasoning, whole.reasoningText);
  assert.equal(await streamed.text, whole.text);
});

test("reasoning given back in the history reaches the template on every surface", async () => {
  const history = (extra) => [{ role: "user", content: "Hi" }, { role: "assistant", content: "Hello.", ...extra },
    { role: "user", content: "Sunny?" }];
  const applied = await fetch(`${server.baseUrl}/apply-template`, {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ messages: history({ reasoning_content: "they greet me" }) }),
  }).then((r) => r.json());
  assert.ok(applied.prompt.includes("<|im_start|>assistant\n<think>they greet me</think>Hello.<|im_end|>"), applied.prompt);

  const chat = async (extra) => (await openai.chat.completions.create({ model: MODEL, messages: history(extra), max_tokens: 1 })).usage.prompt_tokens;
  assert.ok(await chat({ reasoning_content: "they greet me" }) > await chat({}));
  assert.equal(await chat({ reasoning: "they greet me" }), await chat({ reasoning_content: "they greet me" }));

  const ol = async (extra) => (await ollama.chat({ model: MODEL, messages: history(extra), options: { num_predict: 1 } })).prompt_eval_count;
  assert.ok(await ol({ thinking: "they greet me" }) > await ol({}));

  const count = async (blocks) => (await anthropic.messages.countTokens({
    model: MODEL, messages: [{ role: "user", content: "Hi" }, { role: "assistant", content: [...blocks, { type: "text", text: "Hello." }] },
      { role: "user", content: "Sunny?" }],
  })).input_tokens;
  assert.ok(await count([{ type: "thinking", thinking: "they greet me", signature: "" }]) > await count([]));

  const resp = async (items) => (await openai.responses.create({
    model: MODEL, max_output_tokens: 1,
    input: [{ role: "user", content: "Hi" }, ...items, { role: "assistant", content: "Hello." }, { role: "user", content: "Sunny?" }],
  })).usage.input_tokens;
  const reasoning = { type: "reasoning", id: "rs_1", summary: [], content: [{ type: "reasoning_text", text: "they greet me" }] };
  assert.ok(await resp([reasoning]) > await resp([]));
});
