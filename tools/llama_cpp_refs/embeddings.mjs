// Reference embeddings for stories260K from llama.cpp, through npm node-llama-cpp (CPU build).
// Writes tests/data/llama_cpp/stories260K-embeddings.json, which tests/sched/llama_cpp_embed_ref_test.cpp
// compares with vkstream's embeddings. Run by hand (not in CI):
//   mkdir -p /tmp/nlc && cd /tmp/nlc && npm install node-llama-cpp@3.22.1
//   node /path/to/vkstream/tools/llama_cpp_refs/embeddings.mjs \
//        --model /path/to/shared/models/stories260K.gguf \
//        --out /path/to/vkstream/tests/data/llama_cpp/stories260K-embeddings.json
//
// What llama.cpp does here, read from node-llama-cpp 3.22.1 (llama/addon/AddonContext.cpp and
// dist/evaluator/LlamaEmbeddingContext.js):
//  - the context is created with embeddings = true and pooling_type left UNSPECIFIED (only a
//    ranking context sets one), so llama.cpp takes the GGUF's `<arch>.pooling_type`; stories260K has
//    none, so llama.cpp's default for a llama model applies: LLAMA_POOLING_TYPE_NONE;
//  - with NONE, getEmbedding() returns llama_get_embeddings_ith(ctx, -1): the final-normed hidden
//    state of the LAST token, not normalized (LlamaEmbedding keeps the raw vector);
//  - the BOS is prepended when tokenizer.ggml.add_bos_token says so (and EOS appended when
//    add_eos_token says so; stories260K: BOS only).
// node-llama-cpp cannot be told mean pooling, so `llama-embedding --pooling mean` semantics (mean of
// every position's final-normed hidden state, then L2-normalized: --embd-normalize 2) are derived from
// the same llama.cpp calls: with causal attention the hidden state at position k of a sequence is the
// last-token state of its prefix of length k+1, so each prefix is evaluated and its last-token vector
// averaged here (in double).
// The context uses F32 K/V cache and no flash attention so that llama.cpp computes everything in F32
// (its defaults, F16 K/V, would round the cache), matching vkstream's CPU path.
import fs from "node:fs";
import path from "node:path";
import {importNodeLlamaCpp, cpuLlama} from "./load_node_llama_cpp.mjs";

const kTexts = [
  "Once upon a time",
  "The cat sat on the mat.",
  "Tom had a red ball.",
  "She was very happy!",
  "hello",
  "Lily and Tom went to the park. They saw a big red ball and played with it all day. Then the sun went " +
      "down and they walked home, happy and tired, to eat dinner with mom and dad.",
];

function parseArgs(argv) {
  const models = process.env.VKSTREAM_MODELS ?? "../shared/models";
  const args = {model: path.join(models, "stories260K.gguf"), out: null};
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === "--model") args.model = argv[++i];
    else if (argv[i] === "--out") args.out = argv[++i];
    else throw new Error(`unknown argument ${argv[i]} (use --model FILE.gguf --out FILE.json)`);
  }
  return args;
}

function l2normalize(v) {
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  return v.map((x) => x / norm);
}

// Shortest decimal that reads back as the same float32.
function f32(v) {
  return v.map((x) => Number(Math.fround(x).toPrecision(9)));
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const nlc = await importNodeLlamaCpp();
  const {llama, build} = await cpuLlama(nlc);
  const model = await llama.loadModel({modelPath: args.model, gpuLayers: 0});
  const kvType = "F32";
  const context = await model.createContext({
    contextSize: 512,
    sequences: 1,
    threads: 1,
    flashAttention: false,
    experimentalKvCacheKeyType: kvType,
    experimentalKvCacheValueType: kvType,
    _embeddings: true,  // what createEmbeddingContext() passes; it exposes no K/V type option
  });
  const embedder = new nlc.mod.LlamaEmbeddingContext({_llamaContext: context});
  const bos = model.tokens.bos;

  const cases = [];
  for (const text of kTexts) {
    // The ids getEmbeddingFor(text) evaluates: tokenize, then the BOS prepended (add_bos_token).
    const ids = embedder.calculateInputLength(text) > 0 ? [...model.tokenize(text)] : [];
    if (model.tokens.shouldPrependBosToken && ids[0] !== bos) ids.unshift(bos);
    if (embedder.calculateInputLength(text) !== ids.length) throw new Error(`unexpected input length for "${text}"`);
    const last = [...(await embedder.getEmbeddingFor(text)).vector];
    const sum = new Array(last.length).fill(0);
    let lastFromPrefix = null;
    for (let k = 1; k <= ids.length; ++k) {
      // A prefix that starts with the BOS is evaluated as given (nothing prepended).
      const v = (await embedder.getEmbeddingFor(ids.slice(0, k))).vector;
      for (let i = 0; i < v.length; ++i) sum[i] += v[i];
      if (k === ids.length) lastFromPrefix = v;
    }
    // The full-text call and the last prefix are the same evaluation: a sanity check of the method.
    const same = last.every((x, i) => x === lastFromPrefix[i]);
    if (!same) throw new Error(`getEmbeddingFor(text) differs from getEmbeddingFor(ids) for "${text}"`);
    const mean = sum.map((x) => x / ids.length);
    cases.push({
      text,
      token_ids: ids,
      last: f32(last),
      mean: f32(mean),
      mean_l2: f32(l2normalize(mean)),
    });
  }

  const out = {
    generator: "tools/llama_cpp_refs/embeddings.mjs",
    model: path.basename(args.model),
    build,
    context: {
      kv_cache_type: kvType,
      flash_attention: false,
      threads: 1,
      model_pooling_type: "none (no pooling_type key in the GGUF: llama.cpp's default for llama)",
      add_bos: model.tokens.shouldPrependBosToken,
      add_eos: model.tokens.shouldAppendEosToken,
    },
    vectors: {
      last: "node-llama-cpp's own getEmbeddingFor(text): final-normed hidden state of the last token, raw",
      mean: "mean over positions of the final-normed hidden state (each from getEmbeddingFor(prefix)), raw",
      mean_l2: "mean, L2-normalized: llama-embedding --pooling mean --embd-normalize 2 semantics",
    },
    dim: model.embeddingVectorSize,
    cases,
  };
  // One line per array of numbers keeps the file small and diffable.
  const json = JSON.stringify(out, null, 1).replace(/\[\s*([-0-9.e,\s]+?)\s*\]/g,
      (_, inner) => "[" + inner.split(/,\s*/).join(",") + "]") + "\n";
  if (args.out) fs.writeFileSync(args.out, json);
  else process.stdout.write(json);
  await embedder.dispose();
  await model.dispose();
}

main().catch((e) => {
  console.error(`embeddings.mjs: ${e.message}`);
  process.exit(1);
});
