import { expect, test } from "bun:test";
import { formatUsd, parseUsd } from "./money.ts";

test("parses USD strings to exact micro-dollars (no float rounding)", () => {
  const ok = (s: string, signed = false) => {
    const r = parseUsd(s, { signed });
    if (!r.ok) throw new Error(r.error);
    return r.micros;
  };
  expect(ok("5")).toBe(5_000_000);
  expect(ok("$5.00")).toBe(5_000_000);
  expect(ok("0.1")).toBe(100_000);
  expect(ok("0.29")).toBe(290_000); // 0.29 * 1e6 = 290000.00000000006 in floating point
  expect(ok("19.99")).toBe(19_990_000);
  expect(ok("1,234.5")).toBe(1_234_500_000);
  expect(ok(".000001")).toBe(1);
  expect(ok("-2.5", true)).toBe(-2_500_000);
  expect(ok(" $ 7 ")).toBe(7_000_000);
  expect(ok("9007199254.740991")).toBe(Number.MAX_SAFE_INTEGER);
});

test("refuses what it cannot represent exactly, with a reason", () => {
  for (const [s, msg] of [["", "Enter"], ["abc", "Enter"], ["1.0000001", "6 decimal"], ["-1", "positive"], ["0", "zero"], ["9007199254.740992", "too large"], ["1,23", "Enter"], ["1e3", "Enter"]] as const) {
    const r = parseUsd(s);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toContain(msg);
  }
});

test("formats micro-dollars exactly", () => {
  expect(formatUsd(5_000_000)).toBe("$5.00");
  expect(formatUsd(150)).toBe("$0.00015");
  expect(formatUsd(1)).toBe("$0.000001");
  expect(formatUsd(-2_500_000)).toBe("−$2.50");
  expect(formatUsd(1_234_567_890_123)).toBe("$1,234,567.890123");
  expect(formatUsd(0)).toBe("$0.00");
  for (const n of [0, 1, 99, 100_000, 290_000, 19_990_000, 123_456_789]) {
    const r = parseUsd(formatUsd(n).replace("−", "-"), { signed: true, allowZero: true });
    expect(r.ok && r.micros).toBe(n);
  }
});
