/** The usage charts shared by the operator overview, an account's page and the client's page. */
import { useMemo } from "preact/hooks";
import { formatUsdShort } from "../money.ts";
import { fmtCompact, fmtMs, fmtPct } from "../format.ts";
import { Chart, type LineSeries } from "./chart.tsx";

export interface Series {
  requests: number[];
  tokens: number[];
  credits: number[];
  errors: number[];
  error_rate: Array<number | null>;
  latency_p50_ms: Array<number | null>;
  latency_p99_ms: Array<number | null>;
}
export interface Timeseries {
  bucket: string;
  timestamps: number[];
  total: Series;
  models: Record<string, Series>;
}

export const RANGES = {
  "1h": { label: "Last hour", ms: 3_600_000, bucket: "1m" },
  "24h": { label: "24 hours", ms: 86_400_000, bucket: "15m" },
  "7d": { label: "7 days", ms: 7 * 86_400_000, bucket: "1h" },
} as const;
export type RangeKey = keyof typeof RANGES;

export function timeseriesQuery(range: RangeKey, model?: string) {
  const r = RANGES[range];
  const q = new URLSearchParams({ bucket: r.bucket, from: new Date(Date.now() - r.ms).toISOString() });
  if (model) q.set("model", model);
  return q.toString();
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

export function totals(ts: Timeseries) {
  const requests = sum(ts.total.requests);
  return { requests, tokens: sum(ts.total.tokens), credits: sum(ts.total.credits), errors: sum(ts.total.errors), errorRate: requests ? sum(ts.total.errors) / requests : null };
}

export function UsageCharts(p: { ts: Timeseries; perModel?: boolean }) {
  const { ts } = p;
  const models = Object.keys(ts.models);
  const split = (pick: (s: Series) => Array<number | null>): LineSeries[] =>
    p.perModel && models.length > 1 ? models.map((m) => ({ label: m, values: pick(ts.models[m]!) })) : [{ label: "all models", values: pick(ts.total) }];
  const charts = useMemo(() => ({
    requests: split((s) => s.requests),
    tokens: split((s) => s.tokens),
    credits: split((s) => s.credits),
    errors: [{ label: "error rate", values: ts.total.error_rate, color: "#e15759" }],
    latency: [{ label: "p50", values: ts.total.latency_p50_ms, color: "#4f7cff" }, { label: "p99", values: ts.total.latency_p99_ms, color: "#f28e2b" }],
  }), [ts]);
  return (
    <div class="charts">
      <Chart title={`Requests per ${ts.bucket}`} timestamps={ts.timestamps} series={charts.requests} kind="stacked" format={fmtCompact} emptyMax={10} />
      <Chart title={`Tokens per ${ts.bucket}`} timestamps={ts.timestamps} series={charts.tokens} kind="stacked" format={fmtCompact} emptyMax={100} />
      <Chart title={`Credits charged per ${ts.bucket}`} timestamps={ts.timestamps} series={charts.credits} kind="stacked" format={formatUsdShort} emptyMax={10_000} />
      <Chart title="Error rate" timestamps={ts.timestamps} series={charts.errors} format={(v) => fmtPct(v)} max={1} />
      <Chart title="Latency" timestamps={ts.timestamps} series={charts.latency} format={(v) => fmtMs(v)} emptyMax={1000} />
    </div>
  );
}
