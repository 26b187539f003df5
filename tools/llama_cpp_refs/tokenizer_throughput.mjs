// llama.cpp's tokenizer throughput (through npm node-llama-cpp, CPU build) on the texts that
// bench/tokenizer_bench generates, beside vkstream's, and whether both give the same token ids.
// Run by hand (not in CI):
//   mkdir -p /tmp/nlc && cd /tmp/nlc && npm install node-llama-cpp@3.22.1
//   mkdir -p /tmp/tok && /path/to/vkstream/build/bench/tokenizer_bench --models MODELS --write-texts /tmp/tok
//   node /path/to/vkstream/tools/llama_cpp_refs/tokenizer_throughput.mjs --models MODELS --texts /tmp/tok
// Prints one line per vocabulary and text in tokenizer_bench's layout (load ms, encode MB/s, tokens,
// decode MB/s; medians of --reps) and how the ids compare with tokenizer_bench's (`same`, or the first
// differing position). model.tokenize(text) is llama.cpp's common_tokenize(vocab, text,
// add_special = false, parse_special = false), the same call as tokenizer_bench's encode(text, false);
// it is timed at the addon (model._model.tokenize), including node's UTF-16 to UTF-8 conversion of the
// text (~1 ms per MB) and the copy of the ids into a Uint32Array. The load column is node-llama-cpp's loadModel({vocabOnly: true}), which
// besides llama.cpp's vocabulary load parses the GGUF in JavaScript and first tries (and, on a
// vocabulary-only file, fails: the "missing tensor" log lines, silenced here) a full load to estimate
// memory use; it is not comparable with tokenizer_bench's load time.
import fs from "node:fs";
import path from "node:path";
import {importNodeLlamaCpp, cpuLlama} from "./load_node_llama_cpp.mjs";

const kVocabs = [["spm llama2", "llama2-vocab.gguf"], ["bpe llama3", "llama3-vocab.gguf"], ["bpe qwen2", "qwen2-vocab.gguf"]];
const kTexts = ["english", "mixed"];

function parseArgs(argv) {
  const args = {models: process.env.VKSTREAM_MODELS ?? "../shared/models", texts: null, reps: 3, only: ""};
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === "--models") args.models = argv[++i];
    else if (argv[i] === "--texts") args.texts = argv[++i];
    else if (argv[i] === "--reps") args.reps = Number(argv[++i]);
    else if (argv[i] === "--only") args.only = argv[++i];
    else throw new Error(`unknown argument ${argv[i]} (use --models DIR --texts DIR [--reps 3] [--only NAME])`);
  }
  if (!args.texts) throw new Error("--texts DIR is required (the folder of tokenizer_bench --write-texts DIR)");
  if (!(args.reps >= 1 && args.reps <= 100)) throw new Error("--reps must be 1..100");
  return args;
}

const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];

// "same", "no ids file", or where the ids first differ with a few ids of each side.
function compareIds(theirs, oursFile) {
  if (!fs.existsSync(oursFile)) return "no ids file";
  const text = fs.readFileSync(oursFile, "utf8").trim();
  const ours = text === "" ? [] : text.split(" ").map(Number);
  const n = Math.min(ours.length, theirs.length);
  let i = 0;
  while (i < n && ours[i] === theirs[i]) ++i;
  if (i === n && ours.length === theirs.length) return "same";
  const around = (v) => Array.from(v.slice(Math.max(0, i - 2), i + 3)).join(",");
  return `differ at ${i} of ${ours.length}/${theirs.length}: ours ..${around(ours)}.. llama.cpp ..${around(theirs)}..`;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const nlc = await importNodeLlamaCpp();
  const {llama, build} = await cpuLlama(nlc, "fatal");  // see the note on the load column
  console.log(`# node-llama-cpp ${build.node_llama_cpp}, llama.cpp ${build.llama_cpp_repo} ${build.llama_cpp_release}, ` +
              `reps ${args.reps}`);
  const texts = kTexts.map((name) => {
    const bytes = fs.readFileSync(path.join(args.texts, `${name}.txt`));
    return {name, bytes: bytes.length, text: bytes.toString("utf8")};
  });
  console.log(["vocab".padEnd(11), "text".padEnd(8), "load ms".padStart(10), "encode MB/s".padStart(12),
               "tokens".padStart(10), "decode MB/s".padStart(12), " ids vs vkstream's"].join(" "));
  let mismatching = 0;
  for (const [name, file] of kVocabs) {
    if (!name.includes(args.only)) continue;
    const loads = [];
    let model = null;
    for (let r = 0; r < args.reps; ++r) {
      if (model) await model.dispose();
      const t0 = performance.now();
      model = await llama.loadModel({modelPath: path.join(args.models, file), vocabOnly: true});
      loads.push(performance.now() - t0);
    }
    // The addon's tokenize (llama.cpp's common_tokenize, ids in a Uint32Array) without the
    // Array.from copy of model.tokenize(), so that the time is llama.cpp's; the public call where an
    // other node-llama-cpp version lacks it.
    const tokenize = typeof model._model?.tokenize === "function"
        ? (text) => model._model.tokenize(text, false)
        : (text) => model.tokenize(text, false);
    for (const t of texts) {
      const enc = [], dec = [];
      let ids = null;
      for (let r = 0; r < args.reps; ++r) {
        let t0 = performance.now();
        ids = tokenize(t.text);
        enc.push(t.bytes / 1e6 / ((performance.now() - t0) / 1e3));
        t0 = performance.now();
        const back = model.detokenize(ids);
        dec.push(Buffer.byteLength(back, "utf8") / 1e6 / ((performance.now() - t0) / 1e3));
      }
      const stem = file.replace(/\.gguf$/, "");
      const same = compareIds(ids, path.join(args.texts, `${stem}.${t.name}.ids`));
      if (same !== "same") ++mismatching;
      console.log([name.padEnd(11), t.name.padEnd(8), median(loads).toFixed(1).padStart(10),
                   median(enc).toFixed(2).padStart(12), String(ids.length).padStart(10),
                   median(dec).toFixed(1).padStart(12), " " + same].join(" "));
    }
    await model.dispose();
  }
  console.log(`# texts whose ids differ from vkstream's: ${mismatching}`);
}

main().catch((e) => {
  console.error(`tokenizer_throughput.mjs: ${e.message}`);
  process.exit(1);
});
