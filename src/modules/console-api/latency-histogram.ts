/**
 * Latency histograms with logarithmic bins, so percentiles can be merged across buckets and models
 * (exact percentiles cannot be summed). Bin i counts latencies in (2^((i-1)/4), 2^(i/4)] ms: each bin
 * is 19% wider than the one before, so a reported percentile (the bin's upper bound) is at most
 * 19% above the true value. 80 bins reach 2^19.75 ms ≈ 14.7 min; slower requests fall in the last.
 */
import { sql } from "drizzle-orm";

export const LATENCY_BINS = 80;

/** SQL: the bin of `latency_ms` (NULL stays NULL). ln(2) = 0.693147…; 1 ms and faster are bin 0. */
export const latencyBinSql = (column = sql`latency_ms`) =>
  sql`least(${LATENCY_BINS - 1}, greatest(0, ceil(4 * ln(greatest(${column}, 1)::float8) / 0.6931471805599453 - 1e-9)))::int`;

export const binUpperMs = (bin: number) => Math.round(2 ** (bin / 4));

/** The q-quantile (0..1) of a histogram, as its bin's upper bound in ms; null when it is empty. */
export function percentile(hist: ArrayLike<number>, q: number): number | null {
  let total = 0;
  for (let i = 0; i < hist.length; i++) total += hist[i]!;
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (let i = 0; i < hist.length; i++) {
    seen += hist[i]!;
    if (seen >= rank) return binUpperMs(i);
  }
  return binUpperMs(hist.length - 1);
}
