import { afterAll, beforeAll, expect, test } from "bun:test";
import * as tf from "@tensorflow/tfjs-core";
import { loadUseLiteEncoder, type UseLiteEncoder } from "./use-lite-encoder.ts";

// Issue 34's soak: RSS rose 6 % while the JS heap stayed flat, and the in-process encoder was a
// suspect. A forward pass that left one tensor behind would grow the WASM heap by its bytes on every
// batch; this pins the count (measured: 61 tensors, the weights, before and after 2,000 batches).
let encoder: UseLiteEncoder;
beforeAll(async () => {
  encoder = await loadUseLiteEncoder({ backend: "wasm" });
});
afterAll(() => encoder?.dispose());

test("a forward pass leaves no tensor behind, whatever the batch shape", async () => {
  await encoder.embed(["warm up"]);
  const before = tf.memory().numTensors;
  const words = ["soak", "line", "a", "second", "longer", "of", "text", "to", "embed"];
  for (let i = 1; i <= 40; i++) {
    const batch = Array.from({ length: 1 + (i % 32) }, (_, r) => Array.from({ length: 1 + ((i * 7 + r) % 20) }, (_, k) => words[(i + r + k) % words.length]).join(" "));
    expect((await encoder.embed(batch)).length).toBe(batch.length);
  }
  await expect(encoder.embedTokens([[5], []])).rejects.toThrow("no tokens");
  expect(tf.memory().numTensors).toBe(before);
}, 120_000);
