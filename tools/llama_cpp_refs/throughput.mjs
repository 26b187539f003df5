// llama.cpp's own inference throughput on GGUF files (through npm node-llama-cpp, its prebuilt Vulkan or
// CPU binaries; nothing is compiled): prefill tok/s, batch-1 decode tok/s, and aggregate decode tok/s
// with B sequences decoding together. Run by hand (not in CI):
//   mkdir -p /tmp/nlc && cd /tmp/nlc && npm install node-llama-cpp@3.22.1
//   node /path/to/vkstream/tools/llama_cpp_refs/throughput.mjs --model A.gguf[,B.gguf] [--model C.gguf]
//        [--gpu vulkan|false] [--prompt 128] [--gen 32] [--batches 1,8,16] [--reps 3] [--threads N]
//        [--fa auto|on|off] [--json OUT.json]
// --gpu vulkan (the default) loads every layer on the GPU and prints the device llama.cpp uses; when
// llama.cpp cannot give the requested GPU backend, a GPU device, or full offload, the script says so and
// exits 2: it never falls back to the CPU. (llama.cpp's Vulkan backend skips CPU-type devices such as
// lavapipe unless GGML_VK_VISIBLE_DEVICES names them.)
//
// What is timed (performance.now() around node-llama-cpp's low-level sequence API, no chat template, no
// detokenization; medians of --reps, after one untimed warm-up of the same work on the same context):
//  - prefill: sequence.evaluate(prompt).next() on a cleared sequence (clearHistory() before each rep):
//    the --prompt tokens in one llama_decode (batchSize = n_batch = n_ubatch = max(prompt, 512)), logits
//    of the last token only, then one greedy sample;
//  - decode b1: the next --gen iterator steps of the same evaluate(): each one llama_decode of the
//    previously sampled token and a greedy sample (temperature 0; EOG tokens are kept and evaluated, so
//    every rep decodes exactly --gen tokens). ms/step is 1000 / that figure;
//  - decode bB: a context with `sequences: B`; the B prompts are prefilled together (timed separately,
//    B*prompt tokens in batches of batchSize), then the B iterators are stepped in lockstep, one
//    Promise.all per step, which node-llama-cpp batches into one llama_decode of B tokens; aggregate
//    tok/s = B*gen / time. The number of llama_decode calls of the decode phase is counted (the addon's
//    decodeBatch) and should equal --gen.
// The prompt is a fixed English text tokenized by the model (BOS first when the model adds one), cut to
// --prompt tokens, so any vocabulary works. The K/V cache is node-llama-cpp's default, F16 (printed),
// unified across sequences = false (each sequence owns contextSize cells); flash attention: --fa, by
// default node-llama-cpp's "auto" (printed as llama.cpp resolved it where the context tells).
import fs from "node:fs";
import path from "node:path";
import {importNodeLlamaCpp} from "./load_node_llama_cpp.mjs";

const kPromptText =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her " +
    "friends. One day, she saw a big red ball under a tree. She ran to the ball and kicked it high into " +
    "the sky. The sun was warm, the birds were singing, and everyone was happy. ";

class GpuRefusal extends Error {}

function parseArgs(argv) {
  const args = {models: [], gpu: "vulkan", prompt: 128, gen: 32, batches: [1, 8, 16], reps: 3, threads: null,
                fa: "auto", json: null};
  const usage = "use --model FILE.gguf[,FILE.gguf] [--gpu vulkan|false] [--prompt 128] [--gen 32] " +
                "[--batches 1,8,16] [--reps 3] [--threads N] [--fa auto|on|off] [--json OUT]";
  const int = (name, v, lo, hi) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < lo || n > hi) throw new Error(`${name} must be an integer ${lo}..${hi}, got ${v}`);
    return n;
  };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value (${usage})`);
      return argv[++i];
    };
    if (a === "--model") args.models.push(...value().split(",").filter((s) => s !== ""));
    else if (a === "--gpu") args.gpu = value();
    else if (a === "--prompt") args.prompt = int("--prompt", value(), 1, 65536);
    else if (a === "--gen") args.gen = int("--gen", value(), 1, 65536);
    else if (a === "--batches") args.batches = value().split(",").map((b) => int("--batches", b, 1, 1024));
    else if (a === "--reps") args.reps = int("--reps", value(), 1, 100);
    else if (a === "--threads") args.threads = int("--threads", value(), 1, 1024);
    else if (a === "--fa") args.fa = value();
    else if (a === "--json") args.json = value();
    else throw new Error(`unknown argument ${a} (${usage})`);
  }
  if (args.models.length === 0) throw new Error(`--model is required (${usage})`);
  if (args.gpu === "false" || args.gpu === "cpu") args.gpu = false;
  else if (!["vulkan", "cuda"].includes(args.gpu)) throw new Error(`--gpu must be vulkan or false (or cuda), got ${args.gpu}`);
  const fa = {auto: "auto", on: true, true: true, off: false, false: false};
  if (!(args.fa in fa)) throw new Error(`--fa must be auto, on or off, got ${args.fa}`);
  args.fa = fa[args.fa];
  args.batches = [...new Set(args.batches)].sort((a, b) => a - b);
  for (const m of args.models) if (!fs.existsSync(m)) throw new Error(`no such model file: ${m}`);
  return args;
}

const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
const mib = (bytes) => bytes / (1 << 20);
const fmt = (x, digits = 1) => (x == null ? "-" : x.toFixed(digits));

// llama.cpp with the requested backend, or a GpuRefusal: never a silent CPU fallback.
async function requestedLlama(nlc, args) {
  const options = {gpu: args.gpu, build: "never", logLevel: nlc.mod.LlamaLogLevel.error};
  if (args.threads != null) options.maxThreads = args.threads;
  let llama;
  try {
    llama = await nlc.mod.getLlama(options);
  } catch (e) {
    if (args.gpu === false) throw e;
    throw new GpuRefusal(`llama.cpp's ${args.gpu} backend did not load (${e.message})`);
  }
  if (llama.gpu !== args.gpu) {
    throw new GpuRefusal(`asked for gpu ${args.gpu}, llama.cpp gave gpu ${llama.gpu}`);
  }
  const devices = await llama.getGpuDeviceNames();
  if (args.gpu !== false && devices.length === 0) {
    throw new GpuRefusal(`llama.cpp's ${args.gpu} backend loaded but sees no GPU device (it would run on the CPU)` +
                         (args.gpu === "vulkan" ? "; a CPU Vulkan device such as lavapipe needs GGML_VK_VISIBLE_DEVICES" : ""));
  }
  return {llama, devices};
}

// The fixed text tokenized by the model and cut to n tokens (BOS first when the model adds one).
function promptTokens(model, n) {
  const tokens = [];
  if (model.tokens.shouldPrependBosToken && model.tokens.bos != null) tokens.push(model.tokens.bos);
  const chunk = [...model.tokenize(kPromptText)];
  if (chunk.length === 0) throw new Error("the model's tokenizer gives no tokens for the prompt text");
  while (tokens.length < n) tokens.push(...chunk);
  return tokens.slice(0, n);
}

// Counts the addon's decodeBatch calls (one llama_decode each) to check that the B sequences share one
// llama_decode per step; null where this node-llama-cpp version has no such method.
function decodeCounter(context) {
  const ctx = context._ctx;
  if (typeof ctx?.decodeBatch !== "function") return null;
  const counter = {calls: 0};
  const decodeBatch = ctx.decodeBatch.bind(ctx);
  try {
    // The addon's method is read-only on its prototype: shadow it with an own property.
    Object.defineProperty(ctx, "decodeBatch", {
      configurable: true,
      value: (...a) => {
        ++counter.calls;
        return decodeBatch(...a);
      },
    });
  } catch {
    return null;
  }
  return counter;
}

const kEvaluateOptions = {temperature: 0, yieldEogToken: true};

function contextOptions(args, sequences) {
  const options = {
    sequences,
    contextSize: args.prompt + args.gen + 16,  // per sequence; llama.cpp pads it to a multiple of 256
    batchSize: Math.max(args.prompt, 512, sequences),
    flashAttention: args.fa,
  };
  if (args.threads != null) options.threads = args.threads;
  return options;
}

function describeContext(nlc, context) {
  const ggml = nlc.mod.GgmlType;
  return {
    context_size_per_sequence: context.contextSize,
    sequences: context.totalSequences,
    batch_size: context.batchSize,
    flash_attention: context.flashAttention,
    kv_cache: `${ggml[context.kvCacheKeyType] ?? context.kvCacheKeyType}/${ggml[context.kvCacheValueType] ?? context.kvCacheValueType}`,
    threads: context.idealThreads,
  };
}

// One sequence: prefill tok/s and batch-1 decode tok/s per rep (plus an untimed warm-up).
async function measureSingle(nlc, model, prompt, args) {
  const context = await model.createContext(contextOptions(args, 1));
  try {
    const sequence = context.getSequence();
    const prefill = [], decode = [];
    for (let r = -1; r < args.reps; ++r) {
      await sequence.clearHistory();
      if (sequence.nextTokenIndex !== 0) throw new Error("clearHistory() left tokens in the sequence");
      const it = sequence.evaluate(prompt, kEvaluateOptions);
      try {
        const t0 = performance.now();
        if ((await it.next()).done) throw new Error("evaluate() ended after the prompt");
        const t1 = performance.now();
        for (let i = 0; i < args.gen; ++i) {
          if ((await it.next()).done) throw new Error(`evaluate() ended after ${i} decoded tokens`);
        }
        const t2 = performance.now();
        if (r < 0) continue;  // warm-up
        prefill.push(prompt.length / ((t1 - t0) / 1e3));
        decode.push(args.gen / ((t2 - t1) / 1e3));
      } finally {
        await it.return();
      }
    }
    return {context: describeContext(nlc, context), prefill, decode};
  } finally {
    await context.dispose();
  }
}

// B sequences decoding together: prefill and aggregate decode tok/s per rep (plus an untimed warm-up).
async function measureBatched(nlc, model, prompt, batch, args) {
  const context = await model.createContext(contextOptions(args, batch));
  try {
    const counter = decodeCounter(context);
    const sequences = Array.from({length: batch}, () => context.getSequence());
    const prefill = [], decode = [], decodeCalls = [];
    for (let r = -1; r < args.reps; ++r) {
      await Promise.all(sequences.map((s) => s.clearHistory()));
      const its = sequences.map((s) => s.evaluate(prompt, kEvaluateOptions));
      try {
        const t0 = performance.now();
        const first = await Promise.all(its.map((it) => it.next()));
        if (first.some((x) => x.done)) throw new Error("evaluate() ended after the prompt");
        const t1 = performance.now();
        const calls0 = counter?.calls;
        // Lockstep: the B next() calls of a step are queued in the same event-loop turn, so node-llama-cpp's
        // next-cycle dispatch puts them in one batch (free-running loops drift apart: a sequence whose
        // sample comes back first would be decoded alone).
        for (let i = 0; i < args.gen; ++i) {
          const step = await Promise.all(its.map((it) => it.next()));
          if (step.some((x) => x.done)) throw new Error(`evaluate() ended after ${i} decoded tokens`);
        }
        const t2 = performance.now();
        if (r < 0) continue;
        prefill.push(batch * prompt.length / ((t1 - t0) / 1e3));
        decode.push(batch * args.gen / ((t2 - t1) / 1e3));
        if (counter) decodeCalls.push(counter.calls - calls0);
      } finally {
        await Promise.all(its.map((it) => it.return()));
      }
    }
    return {context: describeContext(nlc, context), prefill, decode, decodeCalls};
  } finally {
    await context.dispose();
  }
}

async function measureModel(nlc, llama, device, file, args) {
  const name = path.basename(file);
  const sizeMiB = mib(fs.statSync(file).size);
  const model = await llama.loadModel({modelPath: file, gpuLayers: args.gpu === false ? 0 : "max"});
  try {
    const totalLayers = model.fileInsights.totalLayers;
    if (args.gpu !== false && model.gpuLayers < totalLayers) {
      throw new GpuRefusal(`${name}: only ${model.gpuLayers} of ${totalLayers} layers are on the GPU`);
    }
    const prompt = promptTokens(model, args.prompt);
    const out = {model: name, path: path.resolve(file), size_mib: Number(sizeMiB.toFixed(2)), device,
                 gpu_layers: `${model.gpuLayers}/${totalLayers}`, prompt_tokens: prompt.length, gen_tokens: args.gen,
                 reps: args.reps};
    const single = await measureSingle(nlc, model, prompt, args);
    out.context = single.context;
    out.prefill_tok_s = median(single.prefill);
    out.prefill_reps = single.prefill;
    out.decode_b1_tok_s = median(single.decode);
    out.decode_b1_reps = single.decode;
    out.decode_b1_ms_per_step = 1e3 / out.decode_b1_tok_s;
    const c = single.context;
    if (c.threads > llama.cpuMathCores) {
      console.log(`# WARNING: ${c.threads} threads on ${llama.cpuMathCores} math cores (node-llama-cpp's default is at ` +
                  "least 4): oversubscribed llama.cpp threads can be many times slower; pass --threads");
    }
    console.log(`${name}: context ${c.context_size_per_sequence} tokens/sequence, batch ${c.batch_size}, ` +
                `K/V ${c.kv_cache}, flash attention ${c.flash_attention}, threads ${c.threads}, layers on GPU ${out.gpu_layers}`);
    console.log(`${name}: prefill ${prompt.length} tokens: ${fmt(out.prefill_tok_s)} tok/s ` +
                `(reps ${single.prefill.map((x) => fmt(x)).join(" ")})`);
    console.log(`${name}: decode b1, ${args.gen} tokens: ${fmt(out.decode_b1_tok_s)} tok/s, ` +
                `${fmt(out.decode_b1_ms_per_step, 3)} ms/step (reps ${single.decode.map((x) => fmt(x)).join(" ")})`);
    out.batched = {};
    for (const b of args.batches.filter((x) => x > 1)) {
      const m = await measureBatched(nlc, model, prompt, b, args);
      const entry = {decode_tok_s: median(m.decode), decode_reps: m.decode,
                     ms_per_step: 1e3 * b / median(m.decode),
                     prefill_tok_s: median(m.prefill), prefill_reps: m.prefill,
                     llama_decode_calls_per_rep: m.decodeCalls, context: m.context};
      out.batched[b] = entry;
      const calls = m.decodeCalls.length ? m.decodeCalls.join("/") : "not counted";
      console.log(`${name}: decode b${b}, ${b}x${args.gen} tokens: ${fmt(entry.decode_tok_s)} tok/s aggregate, ` +
                  `${fmt(entry.ms_per_step, 3)} ms/step, llama_decode calls ${calls} for ${args.gen} steps ` +
                  `(reps ${m.decode.map((x) => fmt(x)).join(" ")}); prefill ${b}x${prompt.length}: ` +
                  `${fmt(entry.prefill_tok_s)} tok/s`);
      if (m.decodeCalls.some((n) => n !== args.gen)) {
        console.error(`WARNING: ${name} b${b}: the ${b} sequences did not share one llama_decode per step ` +
                      `(${calls} calls for ${args.gen} steps): the aggregate figure is not a batched decode`);
      }
    }
    return out;
  } finally {
    await model.dispose();
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const nlc = await importNodeLlamaCpp();
  const {llama, devices} = await requestedLlama(nlc, args);
  const release = llama.llamaCppRelease;
  const device = args.gpu === false ? "CPU" : `${args.gpu}: ${devices.join(", ")}`;
  console.log(`# node-llama-cpp ${nlc.version}, llama.cpp ${release.repo} ${release.release}, gpu ${llama.gpu}`);
  if (args.gpu !== false) {
    const vram = await llama.getVramState();
    console.log(`# llama.cpp uses ${args.gpu} device(s): ${devices.join(", ")} (${fmt(mib(vram.total), 0)} MiB, ` +
                `${fmt(mib(vram.free), 0)} MiB free)`);
  } else {
    console.log(`# CPU: ${llama.cpuMathCores} math cores, max threads ${llama.maxThreads}`);
  }
  console.log(`# prompt ${args.prompt} tokens, gen ${args.gen} tokens, batches ${args.batches.join(",")}, ` +
              `median of ${args.reps} reps`);
  const results = [];
  for (const file of args.models) results.push(await measureModel(nlc, llama, device, file, args));

  const bs = args.batches.filter((x) => x > 1);
  console.log("");
  console.log(`| model | MiB | device | prefill ${args.prompt} tok/s | decode b1 tok/s | ` +
              bs.map((b) => `b${b} tok/s`).join(" | ") + (bs.length ? " | " : "") + "ms/step b1 |");
  console.log("|---|---:|---|---:|---:|" + bs.map(() => "---:|").join("") + "---:|");
  for (const r of results) {
    console.log(`| ${r.model} | ${fmt(r.size_mib, 1)} | ${r.device} | ${fmt(r.prefill_tok_s)} | ${fmt(r.decode_b1_tok_s)} | ` +
                bs.map((b) => fmt(r.batched[b]?.decode_tok_s)).join(" | ") + (bs.length ? " | " : "") +
                `${fmt(r.decode_b1_ms_per_step, 3)} |`);
  }

  if (args.json) {
    const out = {
      generator: "tools/llama_cpp_refs/throughput.mjs",
      build: {
        node_llama_cpp: nlc.version,
        llama_cpp_repo: release.repo,
        llama_cpp_release: release.release,
        gpu: llama.gpu,
        devices,
        system_info: llama.systemInfo.trim(),
      },
      settings: {prompt_tokens: args.prompt, gen_tokens: args.gen, batches: args.batches, reps: args.reps,
                 threads: args.threads, flash_attention: args.fa, sampling: "greedy (temperature 0)"},
      models: results,
    };
    // Figures to 3 decimals, one line per array of numbers (as embeddings.mjs writes).
    const round = (_, v) => (typeof v === "number" && !Number.isInteger(v) ? Number(v.toFixed(3)) : v);
    const json = JSON.stringify(out, round, 1).replace(/\[\s*([-0-9.e,\s]+?)\s*\]/g,
        (_, inner) => "[" + inner.split(/,\s*/).join(",") + "]") + "\n";
    fs.writeFileSync(args.json, json);
    console.log(`# wrote ${args.json}`);
  }
  await llama.dispose();
}

main().catch((e) => {
  if (e instanceof GpuRefusal) {
    console.error(`throughput.mjs: REFUSED: ${e.message}. Not measuring on the CPU instead.`);
    process.exit(2);
  }
  console.error(`throughput.mjs: ${e.message}`);
  process.exit(1);
});
