/** Cosine similarity of every pair of vectors (the embeddings playground's matrix). */
export function similarityMatrix(vectors: number[][]): number[][] {
  const norms = vectors.map((v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0)) || 1);
  return vectors.map((a, i) => vectors.map((b, j) => {
    let dot = 0;
    for (let k = 0; k < a.length; k++) dot += a[k]! * (b[k] ?? 0);
    return dot / (norms[i]! * norms[j]!);
  }));
}

/** Embeddings arrive as float arrays or base64 little-endian float32. */
export function decodeEmbedding(e: number[] | string): number[] {
  if (Array.isArray(e)) return e;
  const bin = atob(e);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return Array.from(new Float32Array(bytes.buffer));
}
