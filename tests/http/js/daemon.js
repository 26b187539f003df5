// Shared by the SDK test files: the paths a test needs, a tiny random chat model made by
// vks-make-model with a real vocabulary and its chat template, and a vkstreamd --http serving a
// model on a free loopback port, stopped with SIGTERM after the tests.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const projectRoot = resolve(here, "../../..");
export const buildDir = process.env.VKSTREAM_BUILD_DIR ?? join(projectRoot, "build");
export const modelsDir = process.env.VKSTREAM_MODELS || resolve(projectRoot, "../shared/models");

// A 1-layer model with `vocab`'s tokenizer and chat template (qwen2-vocab.gguf: Qwen2.5's, tools
// included). Its weights are random: the text is gibberish, only structure can be checked.
export function makeChatModel(dir, name, vocab = "qwen2-vocab.gguf") {
  const model = join(dir, `${name}.gguf`);
  const made = spawnSync(join(buildDir, "tools/vks-make-model"), [
    "--dim", "32", "--layers", "1", "--heads", "2", "--kv-heads", "1", "--hidden", "64", "--context", "1024", "--tied",
    "--vocab-from", join(modelsDir, vocab), "-q", "-o", model]);
  if (made.status !== 0) throw new Error(`vks-make-model failed: ${made.stderr}`);
  return model;
}

// Starts vkstreamd --http on `model` (a path, or a function of the temporary folder that makes
// one; null: no --model, the extra arguments say what to serve, e.g. --models-dir); resolves to
// {dir, baseUrl, stop}. extraArgs (or a function of the folder) go last.
export async function startDaemon(prefix, model, extraArgs = []) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const modelPath = typeof model === "function" ? model(dir) : model;
  let log = "";
  const daemon = spawn(join(buildDir, "server/vkstreamd"), [
    ...(modelPath === null ? [] : ["--model", modelPath]), "--cpu",
    "--socket", join(dir, "vkstream.sock"), "--zmq", `ipc://${dir}/router.zmq`, "--pub", `ipc://${dir}/pub.zmq`,
    "--http", "127.0.0.1:0", ...(typeof extraArgs === "function" ? extraArgs(dir) : extraArgs),
  ], { stdio: ["ignore", "pipe", "pipe"] });
  const baseUrl = await new Promise((ok, fail) => {
    const onData = (d) => {
      log += d;
      const m = log.match(/HTTP API on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m && log.includes("vkstreamd ready")) ok(m[1]);
    };
    daemon.stdout.on("data", onData);
    daemon.stderr.on("data", onData);
    daemon.on("exit", () => fail(new Error(`vkstreamd exited: ${log}`)));
    setTimeout(() => fail(new Error(`vkstreamd did not start: ${log}`)), 90000).unref();
  });
  const stop = async () => {
    if (daemon.exitCode === null) {
      const exited = new Promise((r) => daemon.once("exit", r));
      daemon.kill("SIGTERM");
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  return { dir, baseUrl, stop, log: () => log };
}
