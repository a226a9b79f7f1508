/**
 * Worker: one USE-lite model on its own thread. Protocol: {type: "load", modelDir?, backend?} →
 * {type: "loaded", backend} | {type: "error", message}; then {type: "embed", id, batch: number[][]}
 * → {type: "vectors", id, vectors: Float32Array[]} (buffers transferred) | {type: "error", id, message}.
 */
import type { BackendChoice } from "./tf-backend.ts";
import { loadUseLiteEncoder, type UseLiteEncoder } from "./use-lite-encoder.ts";

declare const self: Worker;

let encoder: UseLiteEncoder | null = null;

self.onmessage = async (e: MessageEvent) => {
  const m = e.data as { type: string; id?: number; batch?: number[][]; modelDir?: string; backend?: BackendChoice };
  try {
    if (m.type === "load") {
      encoder = await loadUseLiteEncoder({ modelDir: m.modelDir, backend: m.backend });
      postMessage({ type: "loaded", backend: encoder.backend });
    } else if (m.type === "embed") {
      const vectors = await encoder!.embedTokens(m.batch!);
      postMessage({ type: "vectors", id: m.id, vectors }, vectors.map((v) => v.buffer as ArrayBuffer));
    }
  } catch (err) {
    postMessage({ type: "error", id: m.id, message: (err as Error).message });
  }
};
