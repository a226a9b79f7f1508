/**
 * Vectors on the wire. `base64` is the raw little-endian float32 bytes, base64-encoded: what the
 * openai SDKs ask for by default and decode with `new Float32Array(bytes)`. It is ~4x smaller than
 * float JSON (a 512-dim vector: 2.7 KB vs ~10 KB) and exact.
 */
import { endianness } from "node:os";

export type EncodingFormat = "float" | "base64";

const LITTLE_ENDIAN_HOST = endianness() === "LE";

/** Float32Array → per `format`; anything else (a pass-through upstream's own answer) unchanged. */
export function encodeEmbedding(value: Float32Array | number[] | string, format: EncodingFormat): number[] | string {
  if (!(value instanceof Float32Array)) return value;
  if (format === "float") return Array.from(value);
  return float32ToBase64(value);
}

export function float32ToBase64(v: Float32Array): string {
  if (LITTLE_ENDIAN_HOST) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64");
  const bytes = Buffer.allocUnsafe(v.length * 4);
  for (let i = 0; i < v.length; i++) bytes.writeFloatLE(v[i]!, i * 4);
  return bytes.toString("base64");
}
