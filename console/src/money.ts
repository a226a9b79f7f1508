/**
 * Money in the console: the API speaks integer micro-dollars (1 USD = 1,000,000); people read and
 * type USD. Parsing works on the decimal string's digits (BigInt), never through a float, so
 * "0.1" is exactly 100000 and "19.99" exactly 19990000.
 */
const MICROS = 1_000_000n;
const MAX = BigInt(Number.MAX_SAFE_INTEGER);

export type Parsed = { ok: true; micros: number } | { ok: false; error: string };

/** "5", "$5.00", "1,234.5", "-0.25" (with `signed`), at most 6 decimals. */
export function parseUsd(input: string, opts: { signed?: boolean; allowZero?: boolean } = {}): Parsed {
  const m = /^\s*([+-])?\s*\$?\s*((?:\d{1,3}(?:,\d{3})+)|\d*)(?:\.(\d*))?\s*$/.exec(input);
  if (!m || (m[2] === "" && (m[3] ?? "") === "")) return { ok: false, error: "Enter an amount in USD, e.g. 5 or 12.50." };
  const [, sign, whole, frac = ""] = m;
  if (sign === "-" && !opts.signed) return { ok: false, error: "The amount must be positive." };
  if (frac.length > 6) return { ok: false, error: "At most 6 decimal places (1 micro-dollar = $0.000001)." };
  let micros = BigInt((whole || "0").replaceAll(",", "")) * MICROS + BigInt(frac.padEnd(6, "0") || "0");
  if (micros > MAX) return { ok: false, error: "That amount is too large." };
  if (micros === 0n && !opts.allowZero) return { ok: false, error: "The amount must not be zero." };
  if (sign === "-") micros = -micros;
  return { ok: true, micros: Number(micros) };
}

/** 5000000 → "$5.00"; 150 → "$0.00015"; -2500000 → "−$2.50". Exact: integer arithmetic only. */
export function formatUsd(micros: number, opts: { minDecimals?: number } = {}): string {
  const neg = micros < 0;
  const abs = BigInt(Math.abs(Math.trunc(micros)));
  const whole = (abs / MICROS).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  let frac = (abs % MICROS).toString().padStart(6, "0").replace(/0+$/, "");
  frac = frac.padEnd(opts.minDecimals ?? 2, "0");
  return `${neg ? "−" : ""}$${whole}${frac ? "." + frac : ""}`;
}

/** Short form for chart axes and cards: $1.2k, $3.40, $0.0015. */
export function formatUsdShort(micros: number): string {
  const usd = micros / 1e6;
  const abs = Math.abs(usd);
  if (abs >= 1e6) return `$${(usd / 1e6).toFixed(1)}M`;
  if (abs >= 1e4) return `$${(usd / 1e3).toFixed(1)}k`;
  if (abs >= 1 || abs === 0) return `$${usd.toFixed(2)}`;
  return `$${usd.toPrecision(2)}`;
}
