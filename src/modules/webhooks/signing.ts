/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): the secret is `whsec_` + base64 of
 * random bytes; the signature is `v1,` + base64(HMAC-SHA256(secret bytes, `${id}.${timestamp}.${body}`)).
 */
import { createHmac, randomBytes } from "node:crypto";

export const SECRET_PREFIX = "whsec_";
/** 32 bytes: the HMAC-SHA256 block-size sweet spot (the spec allows 24–64) */
const SECRET_BYTES = 32;

export function newSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString("base64");
}

export function signatureHeader(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, "base64");
  return "v1," + createHmac("sha256", key).update(`${id}.${timestampSeconds}.${body}`).digest("base64");
}

/** The three headers of one attempt (the timestamp is the attempt's, so a retry carries a fresh one). */
export function webhookHeaders(secret: string, id: string, body: string, nowMs = Date.now()): Record<string, string> {
  const timestamp = Math.floor(nowMs / 1000);
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": signatureHeader(secret, id, timestamp, body),
  };
}
