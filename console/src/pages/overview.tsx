import { useState } from "preact/hooks";
import type { Api } from "../api.ts";
import { Async, Badge, Card, ErrorBox, Segmented, Stat, Table } from "../components/ui.tsx";
import { RANGES, timeseriesQuery, totals, UsageCharts, type RangeKey, type Timeseries } from "../components/usage-charts.tsx";
import { fmtAge, fmtCompact, fmtInt, fmtPct, fmtTime } from "../format.ts";
import { useLoad } from "../hooks.ts";
import { formatUsd } from "../money.ts";

export function Overview(p: { api: Api }) {
  const [range, setRange] = useState<RangeKey>("24h");
  const [model, setModel] = useState("");
  const ts = useLoad<Timeseries>((sig) => p.api.get(`/admin/usage/timeseries?${timeseriesQuery(range, model)}`, sig), [range, model], { refreshMs: 30_000 });
  const stats = useLoad((sig) => p.api.get("/admin/stats", sig), [], { refreshMs: 10_000 });
  const failing = useLoad((sig) => p.api.get(`/admin/usage/failing-upstreams?from=${encodeURIComponent(new Date(Date.now() - RANGES[range].ms).toISOString())}`, sig), [range]);
  const models = useLoad((sig) => p.api.get("/admin/models", sig), []);
  const t = ts.data ? totals(ts.data) : null;
  const s = stats.data;
  return (
    <>
      <div class="page-head">
        <h1>Overview</h1>
        <div class="controls">
          <Segmented<RangeKey> label="Time range" value={range} onChange={setRange} options={Object.entries(RANGES).map(([k, v]) => [k as RangeKey, v.label])} />
          <label class="inline">
            <span class="sr-only">Model</span>
            <select value={model} onChange={(e) => setModel((e.target as HTMLSelectElement).value)} aria-label="Model">
              <option value="">All models</option>
              {(models.data?.data ?? []).map((m: any) => <option value={m.id}>{m.id}</option>)}
            </select>
          </label>
        </div>
      </div>
      <ErrorBox error={stats.error} onRetry={stats.reload} />
      <div class="stats">
        <Stat label="Requests" value={t ? fmtCompact(t.requests) : "…"} hint={RANGES[range].label} />
        <Stat label="Tokens" value={t ? fmtCompact(t.tokens) : "…"} />
        <Stat label="Credits charged" value={t ? formatUsd(t.credits) : "…"} />
        <Stat label="Error rate" value={t ? fmtPct(t.errorRate) : "…"} hint="client errors not counted" tone={t && (t.errorRate ?? 0) > 0.05 ? "bad" : undefined} />
        {/* one short figure per card: "0 queued · 0 running" as the value wrapped onto two lines */}
        <Stat label="Video queue" value={s ? `${fmtInt(s.video_queue.queued)} queued` : "…"} hint={s ? `${fmtInt(s.video_queue.processing)} running · oldest job ${fmtAge(s.video_queue.oldest_job_age_seconds)}` : undefined} tone={s && (s.video_queue.oldest_job_age_seconds ?? 0) > 300 ? "warn" : undefined} />
        <Stat label="Open holds" value={s ? fmtInt(s.holds.open) : "…"} hint={s ? formatUsd(s.holds.amount) + " reserved" : undefined} />
      </div>
      <Card title="Usage over time">
        <Async state={ts}>{(d) => <UsageCharts ts={d} perModel={!model} />}</Async>
      </Card>
      <Card title="Upstream failures">
        <Async state={failing} empty={(d: any) => d.data.length === 0} emptyText="No failed requests in this range.">
          {(d: any) => (
            <Table label="Upstream failures">
              <thead><tr><th>Plugin</th><th>Model</th><th class="num">Requests</th><th class="num">Failures</th><th class="num">Rate</th><th>Codes</th><th class="num">Client errors</th><th>Last failure</th></tr></thead>
              <tbody>
                {d.data.map((f: any) => (
                  <tr>
                    <td>{f.plugin}</td><td>{f.model}</td><td class="num">{fmtInt(f.requests)}</td><td class="num">{fmtInt(f.errors)}</td>
                    <td class="num"><Badge tone={f.error_rate >= 0.5 ? "bad" : "warn"}>{fmtPct(f.error_rate)}</Badge></td>
                    <td>{Object.entries(f.error_codes).map(([c, n]) => `${c} × ${n}`).join(", ")}</td>
                    <td class="num">{fmtInt(f.client_errors)}</td>
                    <td>{fmtTime(f.last_error_at)}</td>
                  </tr>
                ))}
              </tbody>
            </Table>
          )}
        </Async>
      </Card>
    </>
  );
}
