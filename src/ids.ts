/** Random, URL-safe identifiers with a readable type prefix: request ids ("req_…"), accounts, keys, holds, jobs. */
const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

export function randomId(prefix: string, length = 20): string {
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  let out = prefix + "_";
  for (const b of bytes) out += ALPHABET[b % 62];
  return out;
}
