import { expect, test } from "bun:test";
import { decodeEmbedding, similarityMatrix } from "./similarity.ts";

test("cosine similarity matrix: 1 on the diagonal, symmetric, orthogonal is 0, opposite is −1", () => {
  const m = similarityMatrix([[1, 0], [0, 2], [-3, 0], [1, 1]]);
  expect(m[0]![0]).toBeCloseTo(1);
  expect(m[0]![1]).toBeCloseTo(0);
  expect(m[0]![2]).toBeCloseTo(-1);
  expect(m[0]![3]).toBeCloseTo(Math.SQRT1_2);
  expect(m[3]![0]).toBeCloseTo(m[0]![3]!);
});

test("base64 float32 embeddings decode to the same numbers", () => {
  const f = new Float32Array([0.5, -1.25, 3]);
  const b64 = Buffer.from(f.buffer).toString("base64");
  expect(decodeEmbedding(b64)).toEqual([0.5, -1.25, 3]);
});
