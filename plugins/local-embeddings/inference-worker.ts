/**
 * Worker: one USE-lite model on its own thread. Protocol: {type: "load", modelDir?, backend?,
 * warmUp?: number[][]} → {type: "loaded", backend} | {type: "error", message}; then {type: "embed", id, batch: number[][]}
 * → {type: "vectors", id, vectors: Float32Array[]} (buffers transferred) | {type: "error", id, message}.
 */
import type { BackendChoice } from "./tf-backend.ts";
import { loadUseLiteEncoder, type UseLiteEncoder } from "./use-lite-encoder.ts";

declare const self: Worker;

let encoder: UseLiteEncoder | null = null;

self.onmessage = async (e: MessageEvent) => {
  const m = e.data as { type: string; id?: number; batch?: number[][]; modelDir?: string; backend?: BackendChoice; warmUp?: number[][] };
  try {
    if (m.type === "load") {
      encoder = await loadUseLiteEncoder({ modelDir: m.modelDir, backend: m.backend });
      if (m.warmUp) await encoder.embedTokens(m.warmUp);
      // Loading leaves the weights' JS-side copies (file buffers, decoded tensors: ~3 × 28 MB)
      // as garbage once they are in the WASM heap; collect them now rather than at some later
      // allocation, so the worker settles at its working size (measured: 148 → 94 MB RSS).
      Bun.gc(true);
      postMessage({ type: "loaded", backend: encoder.backend });
    } else if (m.type === "embed") {
      const vectors = await encoder!.embedTokens(m.batch!);
      postMessage({ type: "vectors", id: m.id, vectors }, vectors.map((v) => v.buffer as ArrayBuffer));
    }
  } catch (err) {
    postMessage({ type: "error", id: m.id, message: (err as Error).message });
  }
};
