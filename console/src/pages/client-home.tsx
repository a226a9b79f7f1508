import { useState } from "preact/hooks";
import type { Api } from "../api.ts";
import { BudgetBars } from "../components/budgets.tsx";
import { Async, Card, ErrorBox, Segmented, Stat, Table } from "../components/ui.tsx";
import { RANGES, timeseriesQuery, UsageCharts, type RangeKey } from "../components/usage-charts.tsx";
import { fmtInt, fmtMs, fmtTime } from "../format.ts";
import { useLoad } from "../hooks.ts";
import { formatUsd } from "../money.ts";

function UsageTable(p: { api: Api }) {
  const [cursors, setCursors] = useState<number[]>([]);
  const before = cursors.at(-1);
  const page = useLoad((sig) => p.api.get(`/v1/usage?limit=20${before ? `&before=${before}` : ""}`, sig), [before]);
  return (
    <Async state={page} empty={(d: any) => d.data.length === 0} emptyText="No requests yet. Try the playground.">
      {(d: any) => (
        <>
          <Table label="Usage records">
            <thead><tr><th>When</th><th>Kind</th><th>Model</th><th class="num">Tokens in / out</th><th class="num">Video s</th><th class="num">Latency</th><th>Status</th><th class="num">Cost</th><th>Reference</th></tr></thead>
            <tbody>
              {d.data.map((u: any) => (
                <tr>
                  <td>{fmtTime(u.created_at)}</td><td>{u.kind}</td><td>{u.model}</td>
                  <td class="num">{u.prompt_tokens === null ? "—" : `${fmtInt(u.prompt_tokens)} / ${fmtInt(u.completion_tokens ?? 0)}`}</td>
                  <td class="num">{u.seconds ?? "—"}</td><td class="num">{fmtMs(u.latency_ms)}</td><td>{u.status}</td>
                  <td class="num">{formatUsd(u.cost)}</td><td class="mono small">{u.ref}</td>
                </tr>
              ))}
            </tbody>
          </Table>
          <div class="pager">
            <button type="button" class="secondary" disabled={!cursors.length} onClick={() => setCursors(cursors.slice(0, -1))}>Newer</button>
            <button type="button" class="secondary" disabled={!d.has_more} onClick={() => setCursors([...cursors, d.next_before])}>Older</button>
          </div>
        </>
      )}
    </Async>
  );
}

export function ClientHome(p: { api: Api }) {
  const [range, setRange] = useState<RangeKey>("24h");
  const acct = useLoad((sig) => p.api.get("/v1/account", sig), [], { refreshMs: 15_000 });
  const ts = useLoad((sig) => p.api.get(`/v1/usage/timeseries?${timeseriesQuery(range)}`, sig), [range]);
  const a = acct.data;
  return (
    <>
      <div class="page-head"><h1>Usage and credits</h1></div>
      <ErrorBox error={acct.error} onRetry={acct.reload} />
      <div class="stats">
        <Stat label="Balance" value={a ? formatUsd(a.balance) : "…"} />
        <Stat label="Held" value={a ? formatUsd(a.held) : "…"} hint="reserved by requests and jobs in progress" />
        <Stat label="Available" value={a ? formatUsd(a.available) : "…"} />
        {a?.plan && <Stat label="Price plan" value={a.plan} hint="your prices: GET /v1/models" />}
      </div>
      {a && a.budgets.length > 0 && <Card title="Budgets"><BudgetBars budgets={a.budgets} /></Card>}
      <Card title="Usage over time" actions={<Segmented<RangeKey> label="Usage range" value={range} onChange={setRange} options={Object.entries(RANGES).map(([k, v]) => [k as RangeKey, v.label])} />}>
        <Async state={ts}>{(d: any) => <UsageCharts ts={d} perModel />}</Async>
      </Card>
      <Card title="Requests"><UsageTable api={p.api} /></Card>
    </>
  );
}
