// Developer check, not run by ctest: loads GGUFs with llama.cpp (through node-llama-cpp's prebuilt
// CPU binary) and prints, for each file, the prompt ids (BOS + "Once upon a time"), llama.cpp's
// greedy continuation and the tokenization of a few strings. Used to pin the expected ids in
// tests/tools/llama_cpp_crosscheck_test.cpp. Setup (outside the repository):
//   mkdir /tmp/llamacheck && cd /tmp/llamacheck && npm install node-llama-cpp@3.22.1
//   NODE_PATH=/tmp/llamacheck/node_modules node /path/to/llama_cpp_greedy.mjs model.gguf ...
import {createRequire} from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.NODE_PATH ?? process.cwd(), "x.js"));
const {getLlama, LlamaLogLevel} = await import(require.resolve("node-llama-cpp"));
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const strings = ["Once upon a time", "Hello world", " leading space", "naïve café 日本", "the theater then", "x\ny\tz 123"];
for (const modelPath of process.argv.slice(2)) {
  const model = await llama.loadModel({modelPath});
  const context = await model.createContext({contextSize: 128});
  const prompt = [model.tokens.bos ?? 1, ...model.tokenize("Once upon a time")];
  const greedy = [];
  for await (const t of context.getSequence().evaluate(prompt, {temperature: 0})) {
    greedy.push(t);
    if (greedy.length >= 24) break;
  }
  console.log(modelPath);
  console.log("  prompt", JSON.stringify(prompt));
  console.log("  greedy", JSON.stringify(greedy));
  for (const s of strings) console.log("  tokenize", JSON.stringify(s), JSON.stringify(model.tokenize(s)));
  await context.dispose();
  await model.dispose();
}
