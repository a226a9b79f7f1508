/**
 * Counters and histograms touched on every request, kept as plain numbers per label set and
 * rendered by the prom-client registry at scrape time (in the metric JSON its own metrics produce),
 * like request-metrics.ts. prom-client's inc/observe validate the labels and hash the label object
 * on every call: on the chat bench the upstream histogram and the token and credit counters cost
 * ~3 % of the CPU profile (fastHashObject, setValue, observeWithoutExemplar); here an update is a
 * Map lookup on the label values joined in label order and a few additions.
 * Same calls as prom-client's (`inc(labels, n)`, `observe(labels, v)`), so callers do not change.
 */
import type { Registry } from "prom-client";
import { histogramRows } from "./request-metrics.ts";

type Labels = Record<string, string>;

const keyOf = (names: readonly string[], labels: Labels) => {
  let key = "";
  for (const n of names) key += labels[n] + "\u0000";
  return key;
};

/** only the declared labels, as strings (what prom-client would export) */
const pick = (names: readonly string[], labels: Labels) => {
  const out: Labels = {};
  for (const n of names) if (labels[n] !== undefined) out[n] = String(labels[n]);
  return out;
};

export interface PlainCounter {
  inc(labels: Labels, value?: number): void;
}

export interface PlainHistogram {
  observe(labels: Labels, seconds: number): void;
}

export function plainCounter(registry: Registry, name: string, help: string, labelNames: readonly string[]): PlainCounter {
  const series = new Map<string, { labels: Labels; value: number }>();
  registry.registerMetric({
    name, help, type: "counter", aggregator: "sum",
    reset() {},
    get: async () => ({ name, help, type: "counter", aggregator: "sum", values: [...series.values()] }),
  } as unknown as Parameters<Registry["registerMetric"]>[0]);
  return {
    inc(labels, value = 1) {
      if (!Number.isFinite(value) || value < 0) throw new Error(`${name}: a counter only goes up (got ${value})`);
      const key = keyOf(labelNames, labels);
      let s = series.get(key);
      if (!s) series.set(key, (s = { labels: pick(labelNames, labels), value: 0 }));
      s.value += value;
    },
  };
}

export function plainHistogram(registry: Registry, name: string, help: string, labelNames: readonly string[], buckets: readonly number[]): PlainHistogram {
  const series = new Map<string, { labels: Labels; counts: Float64Array; sum: number; count: number }>();
  registry.registerMetric({
    name, help, type: "histogram", aggregator: "sum",
    reset() {},
    get: async () => ({
      name, help, type: "histogram", aggregator: "sum",
      values: [...series.values()].flatMap((d) => {
        let n = 0;
        return histogramRows(name, d.labels, buckets, buckets.map((_, i) => (n += d.counts[i]!)), d.count, d.sum);
      }),
    }),
  } as unknown as Parameters<Registry["registerMetric"]>[0]);
  return {
    observe(labels, seconds) {
      const key = keyOf(labelNames, labels);
      let d = series.get(key);
      if (!d) series.set(key, (d = { labels: pick(labelNames, labels), counts: new Float64Array(buckets.length), sum: 0, count: 0 }));
      let i = 0;
      while (i < buckets.length && seconds > buckets[i]!) i++;
      if (i < buckets.length) d.counts[i]!++;
      d.sum += seconds;
      d.count++;
    },
  };
}
