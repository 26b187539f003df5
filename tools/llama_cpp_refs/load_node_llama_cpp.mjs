// Finds and imports the npm package node-llama-cpp for the reference scripts in this folder.
// The package is never a dependency of the repository (CI must not download llama.cpp binaries):
// a developer installs it in a scratch folder and runs the scripts from there, e.g.
//   mkdir /tmp/nlc && cd /tmp/nlc && npm install node-llama-cpp@3.22.1
//   node /path/to/vkstream/tools/llama_cpp_refs/embeddings.mjs ...
// Looked up in $NODE_LLAMA_CPP_DIR/node_modules, then ./node_modules of the current folder
// (ES modules ignore NODE_PATH, hence the explicit search).
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";

export async function importNodeLlamaCpp() {
  const roots = [process.env.NODE_LLAMA_CPP_DIR, process.cwd()].filter(Boolean);
  for (const root of roots) {
    const dir = path.join(root, "node_modules", "node-llama-cpp");
    const pkgFile = path.join(dir, "package.json");
    if (!fs.existsSync(pkgFile)) continue;
    const pkg = JSON.parse(fs.readFileSync(pkgFile, "utf8"));
    const mod = await import(pathToFileURL(path.join(dir, "dist", "index.js")).href);
    return {mod, version: pkg.version, dir};
  }
  throw new Error(`node-llama-cpp not found under ${roots.map((r) => path.join(r, "node_modules")).join(" or ")}; ` +
                  "run `npm install node-llama-cpp@3.22.1` in a scratch folder and run this script from there " +
                  "(or set NODE_LLAMA_CPP_DIR to that folder)");
}

// A CPU-only llama.cpp (the prebuilt binaries; never compiles from source) and its build facts.
// logLevel: a LlamaLogLevel name ("error" by default).
export async function cpuLlama(nlc, logLevel = "error") {
  const llama = await nlc.mod.getLlama({gpu: false, build: "never", logLevel: nlc.mod.LlamaLogLevel[logLevel]});
  return {
    llama,
    build: {
      node_llama_cpp: nlc.version,
      llama_cpp_repo: llama.llamaCppRelease.repo,
      llama_cpp_release: llama.llamaCppRelease.release,
      gpu: llama.gpu,
      system_info: llama.systemInfo.trim(),
    },
  };
}
