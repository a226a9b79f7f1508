/**
 * Checking an inbound webhook signed per Standard Webhooks (https://www.standardwebhooks.com), the
 * scheme Replicate, Svix and others use: headers `webhook-id`, `webhook-timestamp` (Unix seconds)
 * and `webhook-signature` (space-separated `v1,<base64>` entries); the signature is
 * base64(HMAC-SHA256(key, `${id}.${timestamp}.${body}`)) with the key the base64 after `whsec_`.
 *
 *   const check = verifyStandardWebhook(secret, req.headers, req.body);
 *   if (!check.ok) return { accepted: false };            // check.reason says why, for your log
 *
 * The timestamp must be within `toleranceSeconds` (default 300, the spec's) of now, so a captured
 * delivery cannot be replayed later; signatures are compared in constant time.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

export type WebhookCheck = { ok: true; id: string; timestamp: number } | { ok: false; reason: string };

const PREFIX = "whsec_";

export function verifyStandardWebhook(
  secret: string,
  headers: Record<string, string | undefined>,
  body: Uint8Array | string,
  opts: { toleranceSeconds?: number; nowMs?: number } = {},
): WebhookCheck {
  const id = headers["webhook-id"];
  const stamp = headers["webhook-timestamp"];
  const signatures = headers["webhook-signature"];
  if (!id || !stamp || !signatures) return { ok: false, reason: "missing webhook-id, webhook-timestamp or webhook-signature" };
  if (!/^\d{1,12}$/.test(stamp)) return { ok: false, reason: "webhook-timestamp is not Unix seconds" };
  const timestamp = Number(stamp);
  const tolerance = opts.toleranceSeconds ?? 300;
  if (Math.abs((opts.nowMs ?? Date.now()) / 1000 - timestamp) > tolerance) return { ok: false, reason: `webhook-timestamp is more than ${tolerance} s away from now` };
  const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, "base64");
  if (key.length === 0) return { ok: false, reason: "the signing secret is empty" };
  const text = typeof body === "string" ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("utf8");
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.${text}`).digest();
  for (const entry of signatures.split(" ")) {
    const [version, value] = entry.split(",", 2);
    if (version !== "v1" || !value) continue;
    const given = Buffer.from(value, "base64");
    if (given.length === expected.length && timingSafeEqual(given, expected)) return { ok: true, id, timestamp };
  }
  return { ok: false, reason: "no v1 signature matches" };
}
