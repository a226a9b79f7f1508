/**
 * Issue 34: which of the soak's native-memory suspects grows with use, one at a time and without
 * HTTP, Postgres or the rest of the traffic. Prints RSS, JS heap and (embeddings) the TF.js tensor
 * count and WASM heap every `every` operations, after a full GC:
 *
 *   bun bench/soak-parts.ts embeddings [batches=2000] [every=250]   # in-process USE-lite, wasm, batches of 1–32 short sentences
 *   bun bench/soak-parts.ts video [jobs=300] [every=25]             # the soak's video: 1 s at 480x832, warm frames + encoder workers
 *
 * A leak shows as a count (tensors) or a size (WASM heap, heap) that keeps rising; RSS alone swings
 * by tens of MB with transient frame and batch buffers, so read its trend over many rows.
 */
import * as tf from "@tensorflow/tfjs-core";
import { loadUseLiteEncoder } from "../plugins/local-embeddings/use-lite-encoder.ts";
import { FPS } from "../plugins/preview-video/index.ts";
import { RenderPipeline } from "../plugins/preview-video/render-pipeline.ts";
import { hostServices } from "../src/plugin-host/host-services.ts";
import { pngBase64 } from "../test/videos/support.ts";

const [kind = "embeddings", nArg, everyArg] = process.argv.slice(2);
const mb = (x: number) => (x / 2 ** 20).toFixed(1);
const t0 = performance.now();
function row(i: number, extra = "") {
  Bun.gc(true);
  const u = process.memoryUsage();
  console.log(`${String(i).padStart(6)}  ${((performance.now() - t0) / 1000).toFixed(0).padStart(5)} s  rss ${mb(u.rss).padStart(6)} MB  heap ${mb(u.heapUsed).padStart(6)} MB${extra}`);
}

if (kind === "embeddings") {
  const n = Number(nArg ?? 2000), every = Number(everyArg ?? 250);
  const encoder = await loadUseLiteEncoder({ backend: "wasm" });
  const wasmHeap = () => (tf.backend() as unknown as { wasm?: { HEAPU8?: Uint8Array } }).wasm?.HEAPU8?.length ?? NaN;
  const extra = () => `  tensors ${tf.memory().numTensors}  wasm heap ${mb(wasmHeap())} MB`;
  const words = ["soak", "line", "a", "second", "longer", "of", "text", "to", "embed", "lighthouse", "river", "quarterly", "budget"];
  let seed = 1;
  const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  row(0, extra());
  for (let i = 1; i <= n; i++) {
    const batch = Array.from({ length: 1 + Math.floor(rnd() * 32) }, (_, r) => Array.from({ length: 2 + Math.floor(rnd() * 14) }, () => words[Math.floor(rnd() * words.length)]).join(" ") + ` ${i * 31 + r}`);
    await encoder.embed(batch);
    if (i % every === 0) row(i, extra());
  }
  encoder.dispose();
} else if (kind === "video") {
  const n = Number(nArg ?? 300), every = Number(everyArg ?? 25);
  const host = hostServices();
  const pipeline = new RenderPipeline(FPS, host);
  const image = Buffer.from(pngBase64(96, 64), "base64");
  row(0);
  for (let i = 1; i <= n; i++) {
    const req = { image: { bytes: new Uint8Array(image) }, prompt: "a lighthouse at dusk", seed: i, seconds: 1, width: 480, height: 832, jobId: `soak-${i}` };
    await pipeline.render(req as unknown as Parameters<RenderPipeline["render"]>[0], {}, new AbortController().signal, () => {});
    if (i % every === 0) row(i);
  }
  pipeline.close();
} else {
  console.error(`unknown kind ${kind}: embeddings | video`);
  process.exit(2);
}
process.exit(0);
