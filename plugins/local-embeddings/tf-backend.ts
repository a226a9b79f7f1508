import * as tf from "@tensorflow/tfjs-core";
import { setWasmPaths } from "@tensorflow/tfjs-backend-wasm";
import { embeddedWasmFiles } from "./embedded-assets.ts";

/** "auto": tfjs-node's native backend when it is installed, else wasm */
export type BackendChoice = "auto" | "wasm" | "tensorflow";

// The TF.js engine is process-global (one active backend per process), so its initialisation is
// too: the first caller picks the backend, later callers share it.
let backendReady: Promise<string> | undefined;

export function initBackend(choice: BackendChoice = "auto"): Promise<string> {
  backendReady ??= selectBackend(choice).catch((err) => {
    backendReady = undefined;
    throw err;
  });
  return backendReady;
}

async function selectBackend(choice: BackendChoice): Promise<string> {
  // `bun build` drops tfjs-core's side-effect modules (platform, engine op handler) despite its
  // package.json `sideEffects` list, leaving `env().platform` undefined in a compiled binary. Load
  // them explicitly there; under `bun run` (CommonJS build of tfjs-core) they already ran, and
  // importing them again would load a second copy of the ESM core.
  if (tf.env().platform == null) await import("@tensorflow/tfjs-core/dist/base_side_effects.js");
  if (choice !== "wasm" && (await importTfjsNode())) {
    if (await tf.setBackend("tensorflow")) return "tensorflow";
  }
  if (choice === "tensorflow") throw new Error("backend 'tensorflow' requested but @tensorflow/tfjs-node is not importable");
  // Under Node-like runtimes the wasm module reads its binary with fs.readFileSync(path), which
  // also works for /$bunfs paths inside a compiled binary. Threads are off under Node (tfjs#3830),
  // so the SIMD build is the one loaded.
  setWasmPaths(embeddedWasmFiles);
  // Emscripten installs process handlers that rethrow any uncaught exception or unhandled
  // rejection; the host owns those, so remove the ones it added.
  const before = {
    uncaughtException: process.listeners("uncaughtException"),
    unhandledRejection: process.listeners("unhandledRejection"),
  };
  const ok = await tf.setBackend("wasm");
  for (const event of ["uncaughtException", "unhandledRejection"] as const) {
    for (const listener of process.listeners(event)) {
      if (!before[event].includes(listener)) process.removeListener(event, listener as (...args: any[]) => void);
    }
  }
  if (!ok) throw new Error("tfjs wasm backend failed to initialise");
  await tf.ready();
  return "wasm";
}

/** tfjs-node is optional (its install downloads libtensorflow); a variable specifier keeps bundlers from resolving it */
async function importTfjsNode(): Promise<boolean> {
  const specifier = ["@tensorflow", "tfjs-node"].join("/");
  try {
    await import(specifier);
    return true;
  } catch {
    return false;
  }
}
