/**
 * Loading llama.cpp (node-llama-cpp's native addon, CPU build) and a GGUF model, without ever
 * downloading or building anything:
 *
 * - under `bun run`: node-llama-cpp's `getLlama` with `build: "never"` and `skipDownload: true`, so
 *   it only uses the prebuilt binaries npm installed as optional dependencies (@node-llama-cpp/<platform>;
 *   their install scripts are not needed and npm 11 does not run them).
 * - inside the compiled binary: the linux-x64 binaries embedded by embedded-native.ts are written to a
 *   private temporary directory (mode 0700, random name), the addon is loaded from there, the
 *   directory is deleted once everything is mapped (Linux keeps mapped files alive), and node-llama-cpp
 *   is handed the loaded addon. getLlama cannot be used there: it looks for binaries beside its own
 *   modules, which do not exist on disk in a compiled binary.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getLlama, Llama, LlamaLogLevel, type LlamaModel } from "node-llama-cpp";
import { embeddedModelPath, runningCompiled } from "./embedded-model.ts";

export type NativeLog = (level: "debug" | "error", message: string) => void;

/**
 * llama.cpp is a process-wide native library: loading it once per model would map a second copy of
 * ggml (in the compiled binary, from a second temporary directory). So one Llama serves every
 * local-llm model of the process and is never disposed (node-llama-cpp disposes it at exit). Its log
 * sink is the first model's logger: llama.cpp's messages are about the library, not one model.
 */
let shared: Promise<Llama> | undefined;

export function sharedLlama(log: NativeLog): Promise<Llama> {
  shared ??= (runningCompiled ? loadEmbeddedLlama(log) : loadInstalledLlama(log)).catch((err) => {
    shared = undefined;
    throw err;
  });
  return shared;
}

/** Load `modelPath`, or the embedded stories260K when it is undefined. */
export async function loadModelFile(llama: Llama, modelPath: string | undefined): Promise<LlamaModel> {
  if (modelPath !== undefined) return llama.loadModel({ modelPath, gpuLayers: 0 });
  if (!runningCompiled) return llama.loadModel({ modelPath: embeddedModelPath, gpuLayers: 0 });
  // llama.cpp opens the file with the C library, which cannot see /$bunfs: give it a real copy
  // (1.2 MB); once loaded (mmap'd) the copy can go.
  const dir = mkdtempSync(join(tmpdir(), "reelay-model-"));
  try {
    const file = join(dir, "stories260K.gguf");
    writeFileSync(file, new Uint8Array(await Bun.file(embeddedModelPath).arrayBuffer()), { mode: 0o600 });
    return await llama.loadModel({ modelPath: file, gpuLayers: 0 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** llama.cpp logs: errors as errors; its warnings (e.g. stories260K's unset padding token) at debug. */
function logger(log: NativeLog) {
  return (level: LlamaLogLevel, message: string) => {
    const text = message.trim();
    if (!text) return;
    log(level === LlamaLogLevel.error || level === LlamaLogLevel.fatal ? "error" : "debug", text);
  };
}

function loadInstalledLlama(log: NativeLog): Promise<Llama> {
  return getLlama({
    gpu: false,
    build: "never",
    skipDownload: true,
    usePrebuiltBinaries: true,
    progressLogs: false,
    // no cap across contexts: each model's context sets its own thread count (options.threads)
    maxThreads: 0,
    logLevel: LlamaLogLevel.warn,
    logger: logger(log),
  });
}

/** node-llama-cpp's internal constructor (what getLlama calls once it has found a binary), version-pinned in package.json. */
interface LlamaInternals {
  _create(options: Record<string, unknown>): Promise<Llama>;
}

async function loadEmbeddedLlama(log: NativeLog): Promise<Llama> {
  const { embeddedNativeFiles } = await import("./embedded-native.ts");
  const dir = mkdtempSync(join(tmpdir(), "reelay-llama-"));
  try {
    for (const [name, embedded] of Object.entries(embeddedNativeFiles)) {
      writeFileSync(join(dir, name), new Uint8Array(await Bun.file(embedded).arrayBuffer()), { mode: 0o700 });
    }
    const bindingPath = join(dir, "llama-addon.node");
    const bindings = loadAddon(bindingPath);
    const buildMetadata = JSON.parse(await Bun.file(embeddedNativeFiles["_nlcBuildMetadata.json"]!).text());
    // The constructor loads ggml's best CPU backend from the addon's directory, so every
    // library is mapped before the directory is removed below.
    return await (Llama as unknown as LlamaInternals)._create({
      bindings,
      bindingPath,
      buildType: "prebuilt",
      buildMetadata,
      logLevel: LlamaLogLevel.warn,
      logger: logger(log),
      maxThreads: 0,
      vramPadding: 0,
      ramPadding: (total: number) => Math.floor(Math.min(total * 0.25, 1024 ** 3)),
      skipLlamaInit: false,
      debug: false,
      numa: false,
      tempDir: false,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * dlopen of the addon written under $TMPDIR. A file system mounted noexec (Docker's default for
 * `tmpfs`, systemd's NoExecPaths=) refuses to map it with a message that does not say why
 * ("failed to map segment from shared object"): say what to change.
 */
function loadAddon(path: string): unknown {
  try {
    return createRequire(import.meta.url)(path);
  } catch (err) {
    const message = (err as Error).message ?? String(err);
    if (!/failed to map segment|operation not permitted/i.test(message)) throw err;
    throw new Error(
      `llama.cpp cannot be loaded from TMPDIR (${tmpdir()}): its file system does not allow executing files (mounted noexec?). ` +
        `Point TMPDIR at a directory on an exec-capable mount (Docker: tmpfs "/tmp:exec"). (${message})`,
      { cause: err },
    );
  }
}
