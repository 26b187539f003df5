// Random mixed-script strings tokenized by llama.cpp (npm node-llama-cpp, CPU build), written in
// llama.cpp's own tokenizer-case format so that tests/tokenizer/llama_cpp_random_cases_test.cpp
// compares vkstream's ids with them. The 46 reference cases per vocabulary are hand-picked; these
// add many short strings that mix the character classes the pre-tokenizer regexes tell apart
// (letters, marks, numbers of other scripts, symbols, emoji, Unicode spaces, contractions).
// Run by hand (not in CI):
//   mkdir -p /tmp/nlc && cd /tmp/nlc && npm install node-llama-cpp@3.22.1
//   node /path/to/vkstream/tools/llama_cpp_refs/tokenizer_random_cases.mjs --models MODELS \
//     --out /path/to/vkstream/tests/data/llama_cpp [--count 1000] [--seed 1]
// Writes OUT/<vocab>-random-cases.{txt,ids} for llama2 (SPM), llama3 and qwen2 (BPE): strings
// separated by lines "__ggml_vocab_test__", one line of ids per string, no BOS, specials not parsed
// (llama.cpp's common_tokenize(vocab, text, add_special = false, parse_special = false)).
import fs from "node:fs";
import path from "node:path";
import {importNodeLlamaCpp, cpuLlama} from "./load_node_llama_cpp.mjs";

const kVocabs = ["llama2", "llama3", "qwen2"];
const kSeparator = "\n__ggml_vocab_test__\n";

// Character pools, each a list of code points or [first, last] ranges.
const kPools = [
  ["ascii letters", [[0x41, 0x5a], [0x61, 0x7a]]],
  ["ascii digits", [[0x30, 0x39]]],
  ["ascii punctuation and symbols", [[0x21, 0x2f], [0x3a, 0x40], [0x5b, 0x60], [0x7b, 0x7e]]],
  ["spaces", [0x20, 0x20, 0x20, 0x09, 0x0a, 0x0d, 0x0b, 0x0c]],
  ["unicode spaces", [0xa0, 0x1680, [0x2000, 0x200a], 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0x85]],
  ["contractions", ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "'Re", "'D"]],
  ["latin-1 and latin extended", [[0xc0, 0xff], [0x100, 0x17f]]],
  ["greek and cyrillic", [[0x391, 0x3c9], [0x410, 0x44f]]],
  ["cjk, kana, hangul", [[0x4e00, 0x4e80], [0x3041, 0x3096], [0x30a1, 0x30fa], [0xac00, 0xac40]]],
  ["arabic and devanagari (with marks)", [[0x627, 0x64a], [0x64b, 0x652], [0x905, 0x939], [0x93e, 0x94d]]],
  ["combining marks", [[0x300, 0x36f], 0x20dd]],
  ["other-script numbers", [[0x660, 0x669], [0xff10, 0xff19], [0x2160, 0x216b], 0xbd, 0xb2, 0xb3, [0x2460, 0x2473]]],
  ["symbols", [0xa9, 0xae, 0xb0, 0xb1, 0xd7, 0xf7, 0x20ac, 0xa3, 0xa5, 0x2122, [0x2190, 0x2199], [0x2200, 0x2211],
               [0x2500, 0x2510], 0x2026, 0x2014, 0x2013, 0x201c, 0x201d, 0x2018, 0x2019, 0xbf, 0xa1]],
  ["emoji", [[0x1f600, 0x1f64f], [0x1f980, 0x1f9a0], 0x2764, 0xfe0f, 0x200d, [0x1f3fb, 0x1f3ff], 0x1f1fa, 0x1f1f8]],
  ["format and private use", [0x200b, 0x200c, 0x200d, 0xfeff, 0xe000, 0xf8ff, 0x00ad]],
];

function parseArgs(argv) {
  const args = {models: process.env.VKSTREAM_MODELS ?? "../shared/models", out: null, count: 1000, seed: 1};
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === "--models") args.models = argv[++i];
    else if (argv[i] === "--out") args.out = argv[++i];
    else if (argv[i] === "--count") args.count = Number(argv[++i]);
    else if (argv[i] === "--seed") args.seed = Number(argv[++i]);
    else throw new Error(`unknown argument ${argv[i]} (use --models DIR --out DIR [--count N] [--seed S])`);
  }
  if (!args.out) throw new Error("--out DIR is required");
  if (!(args.count >= 1 && args.count <= 100000)) throw new Error("--count must be 1..100000");
  return args;
}

// mulberry32: a small seeded generator, so the same --seed writes the same strings.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pick(random, items) { return items[Math.floor(random() * items.length)]; }

function char(random, pool) {
  const item = pick(random, pool);
  if (typeof item === "string") return item;
  if (Array.isArray(item)) return String.fromCodePoint(item[0] + Math.floor(random() * (item[1] - item[0] + 1)));
  return String.fromCodePoint(item);
}

// 1..8 runs, each 1..6 characters of one pool: runs make the class boundaries the regexes split on.
function randomText(random) {
  let s = "";
  const runs = 1 + Math.floor(random() * 8);
  for (let r = 0; r < runs; ++r) {
    const [, pool] = pick(random, kPools);
    const n = 1 + Math.floor(random() * 6);
    for (let i = 0; i < n; ++i) s += char(random, pool);
  }
  return s;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const random = rng(args.seed);
  const texts = [];
  while (texts.length < args.count) {
    const t = randomText(random);
    if (!t.includes("__ggml_vocab_test__")) texts.push(t);
  }
  const nlc = await importNodeLlamaCpp();
  const {llama, build} = await cpuLlama(nlc);
  fs.mkdirSync(args.out, {recursive: true});
  for (const name of kVocabs) {
    const model = await llama.loadModel({modelPath: path.join(args.models, `${name}-vocab.gguf`), vocabOnly: true});
    const ids = texts.map((t) => Array.from(model.tokenize(t, false)).join(" "));
    fs.writeFileSync(path.join(args.out, `${name}-random-cases.txt`), texts.map((t) => t + kSeparator).join(""));
    fs.writeFileSync(path.join(args.out, `${name}-random-cases.ids`), ids.join("\n") + "\n");
    await model.dispose();
  }
  fs.writeFileSync(path.join(args.out, "random-cases.build.json"),
                   JSON.stringify({seed: args.seed, count: args.count, ...build}, null, 2) + "\n");
  console.log(`wrote ${args.count} cases for ${kVocabs.join(", ")} under ${args.out}`);
}

main().catch((e) => {
  console.error(`tokenizer_random_cases.mjs: ${e.message}`);
  process.exit(1);
});
