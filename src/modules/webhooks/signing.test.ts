import { describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { newSigningSecret, signatureHeader, webhookHeaders } from "./signing.ts";
import { backoffMs } from "./delivery-worker.ts";

describe("Standard Webhooks signing", () => {
  test("matches the specification's published example", () => {
    // https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md
    expect(signatureHeader("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, '{"test": 2432232314}')).toBe("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
  });

  test("the standardwebhooks library verifies what we sign, and nothing else", () => {
    const secret = newSigningSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), "base64")).toHaveLength(32);
    const body = JSON.stringify({ type: "video.generation.completed", data: { id: "vid_1", note: "ünïcødé ✓" } });
    const headers = webhookHeaders(secret, "msg_1", body);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(newSigningSecret()).verify(body, headers)).toThrow();
    expect(() => new Webhook(secret).verify(body + " ", headers)).toThrow();
    expect(() => new Webhook(secret).verify(body, { ...headers, "webhook-id": "msg_2" })).toThrow();
    // a replayed old attempt is refused by the receiver's 5-minute tolerance
    const old = webhookHeaders(secret, "msg_1", body, Date.now() - 10 * 60_000);
    expect(() => new Webhook(secret).verify(body, old)).toThrow();
  });
});

describe("retry backoff", () => {
  test("doubles from the base, capped, each wait drawn from [½, 1] of it", () => {
    const lo = () => 0;
    const hi = () => 1; // Math.random() stays below 1; the top of the range
    expect([1, 2, 3, 4].map((n) => backoffMs(n, 5_000, 3_600_000, hi))).toEqual([5_000, 10_000, 20_000, 40_000]);
    expect([1, 2, 3, 4].map((n) => backoffMs(n, 5_000, 3_600_000, lo))).toEqual([2_500, 5_000, 10_000, 20_000]);
    expect(backoffMs(30, 5_000, 3_600_000, hi)).toBe(3_600_000);
    expect(backoffMs(500, 5_000, 3_600_000, lo)).toBe(1_800_000);
  });

  test("the default schedule keeps trying for the whole 24 h window, about 40 attempts", () => {
    let elapsed = 0;
    let attempts = 1;
    while (elapsed + backoffMs(attempts, 5_000, 3_600_000, () => 0.5) <= 86_400_000) elapsed += backoffMs(attempts++, 5_000, 3_600_000, () => 0.5);
    expect(attempts).toBeGreaterThanOrEqual(30);
    expect(attempts).toBeLessThanOrEqual(45);
  });
});
