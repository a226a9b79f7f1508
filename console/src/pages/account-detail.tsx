import { useState } from "preact/hooks";
import type { Api } from "../api.ts";
import { Budgets, PlanPicker } from "../components/budgets.tsx";
import { CreateKey, KeyTable } from "../components/keys.tsx";
import { Async, Card, ErrorBox, Field, Segmented, Stat, Table } from "../components/ui.tsx";
import { UsdInput, usdState } from "../components/usd-input.tsx";
import { RANGES, timeseriesQuery, UsageCharts, type RangeKey } from "../components/usage-charts.tsx";
import { fmtInt, fmtTime } from "../format.ts";
import { useAction, useLoad } from "../hooks.ts";
import { formatUsd } from "../money.ts";

function CreditForm(p: { api: Api; id: string; kind: "grant" | "adjust"; onDone(): void }) {
  const [amount, setAmount] = useState("");
  const [reason, setReason] = useState("");
  const [done, setDone] = useState<string | null>(null);
  const signed = p.kind === "adjust";
  const submit = useAction(async () => {
    const a = usdState(amount, { signed });
    if (!a.ok) throw new Error(a.error);
    if (signed && !reason.trim()) throw new Error("An adjustment needs a reason.");
    const body: Record<string, unknown> = { amount: a.micros };
    if (reason.trim()) body.reason = reason.trim();
    await p.api.post(`/admin/accounts/${encodeURIComponent(p.id)}/${p.kind === "grant" ? "credits" : "adjustments"}`, body);
    setDone(`${p.kind === "grant" ? "Granted" : "Adjusted by"} ${formatUsd(a.micros)}.`);
    setAmount("");
    setReason("");
    p.onDone();
  });
  return (
    <form class="stack" onSubmit={(e) => { e.preventDefault(); setDone(null); submit.run(); }}>
      <UsdInput name={`${p.kind}-amount`} label={signed ? "Amount (USD, negative to take away)" : "Amount (USD)"} value={amount} onInput={setAmount} signed={signed} />
      <Field label={signed ? "Reason (required)" : "Reason"}><input name={`${p.kind}-reason`} value={reason} maxLength={500} onInput={(e) => setReason((e.target as HTMLInputElement).value)} /></Field>
      <ErrorBox error={submit.error} />
      {done && <p class="ok" role="status">{done}</p>}
      <button type="submit" disabled={submit.pending}>{p.kind === "grant" ? "Grant credits" : "Adjust credits"}</button>
    </form>
  );
}

function LimitsForm(p: { api: Api; acct: any; onDone(): void }) {
  const keys = ["requests_per_minute", "tokens_per_minute", "concurrent_video_jobs"] as const;
  const labels = { requests_per_minute: "Requests per minute", tokens_per_minute: "Tokens per minute", concurrent_video_jobs: "Concurrent video jobs" };
  const [vals, setVals] = useState<Record<string, string>>(Object.fromEntries(keys.map((k) => [k, p.acct.limits[k] === null ? "" : String(p.acct.limits[k])])));
  const save = useAction(async () => {
    const body: Record<string, number | null> = {};
    for (const k of keys) {
      const v = vals[k]!.trim();
      if (v !== "" && !/^\d+$/.test(v)) throw new Error(`${labels[k]}: a whole number, or empty for the default.`);
      body[k] = v === "" ? null : Number(v);
    }
    await p.api.patch(`/admin/accounts/${encodeURIComponent(p.acct.id)}/limits`, body);
    p.onDone();
  });
  return (
    <form class="stack" onSubmit={(e) => { e.preventDefault(); save.run(); }}>
      {keys.map((k) => (
        <Field label={labels[k]} hint="empty: the configured default">
          <input name={k} inputMode="numeric" value={vals[k]} onInput={(e) => setVals({ ...vals, [k]: (e.target as HTMLInputElement).value })} />
        </Field>
      ))}
      <ErrorBox error={save.error} />
      <button type="submit" disabled={save.pending}>Save limits</button>
    </form>
  );
}

function Ledger(p: { api: Api; id: string; refresh: number }) {
  const [cursors, setCursors] = useState<number[]>([]);
  // holds and leases (amount 0, moved `held` only) outnumber the money rows of a busy account: hidden unless asked for
  const [reservations, setReservations] = useState(false);
  const before = cursors.at(-1);
  const page = useLoad((sig) => p.api.get(`/admin/accounts/${encodeURIComponent(p.id)}/ledger?limit=20${reservations ? "" : "&reservations=false"}${before ? `&before=${before}` : ""}`, sig), [p.id, before, p.refresh, reservations]);
  return (
    <>
    <label class="check">
      <input type="checkbox" name="ledger-reservations" checked={reservations} onChange={(e) => { setCursors([]); setReservations((e.target as HTMLInputElement).checked); }} />
      Show holds and leases (credit reserved and given back: amount $0.00)
    </label>
    <Async state={page} empty={(d: any) => d.data.length === 0} emptyText="No ledger entries.">
      {(d: any) => (
        <>
          <Table label="Ledger">
            <thead><tr><th>When</th><th>Kind</th><th class="num">Amount</th><th class="num">Held change</th><th>Reason</th><th>Reference</th></tr></thead>
            <tbody>
              {d.data.map((e: any) => (
                <tr>
                  <td>{fmtTime(e.created_at)}</td>
                  <td>{e.kind}</td>
                  <td class={`num ${e.amount < 0 ? "neg" : e.amount > 0 ? "pos" : ""}`}>{formatUsd(e.amount)}</td>
                  <td class="num">{e.held_change ? formatUsd(e.held_change) : "—"}</td>
                  <td>{e.reason}</td>
                  <td class="mono">{e.ref ?? "—"}</td>
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
    </>
  );
}

export function AccountDetail(p: { api: Api; id: string }) {
  const [refresh, setRefresh] = useState(0);
  const [range, setRange] = useState<RangeKey>("24h");
  const bump = () => setRefresh((r) => r + 1);
  const acct = useLoad((sig) => p.api.get(`/admin/accounts/${encodeURIComponent(p.id)}`, sig), [p.id, refresh]);
  const ts = useLoad((sig) => p.api.get(`/admin/usage/timeseries?${timeseriesQuery(range)}&account=${encodeURIComponent(p.id)}`, sig), [p.id, range, refresh]);
  const byModel = useLoad((sig) => p.api.get(`/admin/usage/models?account=${encodeURIComponent(p.id)}&from=${encodeURIComponent(new Date(Date.now() - RANGES[range].ms).toISOString())}`, sig), [p.id, range, refresh]);
  const a = acct.data;
  return (
    <>
      <div class="page-head">
        <h1><a href="#/accounts" class="crumb">Accounts</a> / {a?.name ?? p.id}</h1>
        <button type="button" class="secondary" onClick={bump}>Refresh</button>
      </div>
      <ErrorBox error={acct.error} onRetry={acct.reload} />
      <div class="stats">
        <Stat label="Balance" value={a ? formatUsd(a.balance) : "…"} />
        <Stat label="Held" value={a ? formatUsd(a.held) : "…"} hint="reserved by open requests and jobs" />
        <Stat label="Available" value={a ? formatUsd(a.available) : "…"} />
        <Stat label="Account id" value={<span class="mono small">{p.id}</span>} hint={a ? `created ${fmtTime(a.created_at)}` : undefined} />
      </div>
      <div class="grid-3">
        <Card title="Grant credits"><CreditForm api={p.api} id={p.id} kind="grant" onDone={bump} /></Card>
        <Card title="Adjust credits"><CreditForm api={p.api} id={p.id} kind="adjust" onDone={bump} /></Card>
        <Card title="Rate limits">{a ? <LimitsForm api={p.api} acct={a} onDone={bump} /> : null}</Card>
      </div>
      <div class="grid-2 wide-left">
        <Card title="Account budgets"><Budgets api={p.api} path={`/admin/accounts/${encodeURIComponent(p.id)}/budgets`} label="Account budgets" refresh={refresh} /></Card>
        <Card title="Price plan">{a ? <PlanPicker api={p.api} accountId={p.id} current={a.plan ?? null} onDone={bump} /> : null}</Card>
      </div>
      <Card title="Usage" actions={<Segmented<RangeKey> label="Usage range" value={range} onChange={setRange} options={Object.entries(RANGES).map(([k, v]) => [k as RangeKey, v.label])} />}>
        <Async state={ts}>{(d: any) => <UsageCharts ts={d} perModel />}</Async>
        <Async state={byModel} empty={(d: any) => d.data.length === 0} emptyText="No usage in this range.">
          {(d: any) => (
            <Table label="Usage per model">
              <thead><tr><th>Model</th><th>Kind</th><th class="num">Requests</th><th class="num">Tokens</th><th class="num">Video s</th><th class="num">Charged</th></tr></thead>
              <tbody>{d.data.map((u: any) => <tr><td>{u.model}</td><td>{u.kind}</td><td class="num">{fmtInt(u.requests)}</td><td class="num">{fmtInt(u.tokens)}</td><td class="num">{fmtInt(u.seconds)}</td><td class="num">{formatUsd(u.credits)}</td></tr>)}</tbody>
            </Table>
          )}
        </Async>
      </Card>
      <div class="grid-2 wide-left">
        <Card title="Keys"><KeyTable api={p.api} accountId={p.id} refresh={refresh} /></Card>
        <Card title="New key"><CreateKey api={p.api} accountId={p.id} onCreated={bump} /></Card>
      </div>
      <Card title="Ledger"><Ledger api={p.api} id={p.id} refresh={refresh} /></Card>
    </>
  );
}
