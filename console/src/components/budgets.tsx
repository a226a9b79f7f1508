/**
 * Budgets: a bar per window (spent, reserved, what is left, when it resets, the thresholds reached
 * in it), and the editor of a key's or an account's set (PUT replaces it). The server does the
 * money; the form only turns USD into micro-dollars exactly (money.ts).
 */
import { useState } from "preact/hooks";
import type { Api } from "../api.ts";
import { fmtTime } from "../format.ts";
import { useAction, useLoad } from "../hooks.ts";
import { formatUsd, parseUsd } from "../money.ts";
import { Async, Badge, ErrorBox, Table } from "./ui.tsx";

const PERIOD = { day: "Daily", week: "Weekly", month: "Monthly", lifetime: "Lifetime" } as Record<string, string>;

export function describeBudget(b: any): string {
  const who = b.scope === "key" ? "Key" : "Account";
  const tz = b.period === "lifetime" ? "" : ` (${b.timezone})`;
  const models = b.models ? ` · ${b.models.join(", ")}` : "";
  return `${who} · ${PERIOD[b.period] ?? b.period}${tz}${models}`;
}

/** One bar per window: spent (solid), reserved (hatched), left; the thresholds as ticks. */
export function BudgetBars(p: { budgets: any[] }) {
  if (p.budgets.length === 0) return <p class="empty">No budgets: only the balance limits spending.</p>;
  return (
    <ul class="budget-bars">
      {p.budgets.map((b) => {
        const w = b.window;
        const pct = (x: number) => (b.limit > 0 ? Math.min(100, (100 * x) / b.limit) : 100);
        const used = w.spent + w.reserved;
        const tone = used >= b.limit ? "bad" : pct(used) >= 80 ? "warn" : "ok";
        return (
          <li class="budget" data-testid="budget-bar">
            <div class="budget-head">
              <strong>{describeBudget(b)}</strong>
              <span class="muted small">{w.resets_at ? `resets ${fmtTime(w.resets_at)}` : "never resets"}</span>
            </div>
            <div class={`bar ${tone}`} role="meter" aria-valuemin={0} aria-valuemax={b.limit} aria-valuenow={used} aria-label={`${describeBudget(b)}: ${formatUsd(used)} of ${formatUsd(b.limit)} used`}>
              <span class="bar-spent" style={{ width: `${pct(w.spent)}%` }} />
              <span class="bar-reserved" style={{ width: `${pct(w.reserved)}%` }} />
              {b.thresholds.map((t: number) => <span class="bar-tick" style={{ left: `${t}%` }} aria-hidden="true" />)}
            </div>
            <div class="budget-figures small">
              <span>spent <strong>{formatUsd(w.spent)}</strong> of {formatUsd(b.limit)}</span>
              {w.reserved > 0 && <span>reserved {formatUsd(w.reserved)}</span>}
              <span data-testid="budget-left">{formatUsd(w.remaining)} left</span>
              {w.alerts.map((a: any) => <Badge tone={a.threshold >= 100 ? "bad" : "warn"}>{a.threshold} % reached {fmtTime(a.reached_at)}</Badge>)}
            </div>
          </li>
        );
      })}
    </ul>
  );
}

interface Row {
  period: string;
  limit: string;
  timezone: string;
  models: string;
  thresholds: string;
}

const toRow = (b: any): Row => ({ period: b.period, limit: formatUsd(b.limit).replace(/^\$/, "").replaceAll(",", ""), timezone: b.timezone, models: b.models?.join(", ") ?? "", thresholds: b.thresholds.join(", ") });
const blank = (): Row => ({ period: "month", limit: "", timezone: "UTC", models: "", thresholds: "80, 100" });

/** The set as rows of a form; Save replaces it on the server (an empty set removes every budget). */
function BudgetForm(p: { api: Api; path: string; current: any[]; onSaved(): void; label: string }) {
  const [rows, setRows] = useState<Row[]>(p.current.map(toRow));
  const set = (i: number, k: keyof Row, v: string) => setRows(rows.map((r, j) => (j === i ? { ...r, [k]: v } : r)));
  const save = useAction(async () => {
    const budgets = rows.map((r, i) => {
      const limit = parseUsd(r.limit, { allowZero: true });
      if (!limit.ok) throw new Error(`Budget ${i + 1}: ${limit.error}`);
      const thresholds = r.thresholds.split(",").map((s) => s.trim()).filter(Boolean).map(Number);
      if (thresholds.some((t) => !Number.isInteger(t) || t < 1 || t > 100)) throw new Error(`Budget ${i + 1}: thresholds are whole percents from 1 to 100.`);
      const models = r.models.split(",").map((s) => s.trim()).filter(Boolean);
      return { period: r.period, limit: limit.micros, timezone: r.timezone.trim() || "UTC", ...(models.length ? { models } : {}), thresholds };
    });
    await p.api.put(p.path, { budgets });
    p.onSaved();
  });
  return (
    <form class="stack" onSubmit={(e) => { e.preventDefault(); save.run(); }} aria-label={p.label}>
      {rows.length > 0 && (
        <Table label={`${p.label}: budgets`}>
          <thead><tr><th>Period</th><th>Limit (USD)</th><th>Timezone</th><th>Models (empty: all)</th><th>Alerts at %</th><th><span class="sr-only">Remove</span></th></tr></thead>
          <tbody>
            {rows.map((r, i) => (
              <tr>
                <td>
                  <select name={`period-${i}`} aria-label={`Budget ${i + 1} period`} value={r.period} onChange={(e) => set(i, "period", (e.target as HTMLSelectElement).value)}>
                    {Object.entries(PERIOD).map(([v, t]) => <option value={v}>{t}</option>)}
                  </select>
                </td>
                <td><input name={`limit-${i}`} aria-label={`Budget ${i + 1} limit in USD`} inputMode="decimal" value={r.limit} onInput={(e) => set(i, "limit", (e.target as HTMLInputElement).value)} /></td>
                <td><input name={`timezone-${i}`} aria-label={`Budget ${i + 1} timezone`} value={r.timezone} disabled={r.period === "lifetime"} onInput={(e) => set(i, "timezone", (e.target as HTMLInputElement).value)} /></td>
                <td><input name={`models-${i}`} aria-label={`Budget ${i + 1} models`} value={r.models} onInput={(e) => set(i, "models", (e.target as HTMLInputElement).value)} /></td>
                <td><input name={`thresholds-${i}`} aria-label={`Budget ${i + 1} alert thresholds`} value={r.thresholds} onInput={(e) => set(i, "thresholds", (e.target as HTMLInputElement).value)} /></td>
                <td><button type="button" class="secondary danger-text" aria-label={`Remove budget ${i + 1}`} onClick={() => setRows(rows.filter((_, j) => j !== i))}>Remove</button></td>
              </tr>
            ))}
          </tbody>
        </Table>
      )}
      <ErrorBox error={save.error} />
      <div class="row tight">
        <button type="button" class="secondary" onClick={() => setRows([...rows, blank()])}>Add a budget</button>
        <button type="submit" disabled={save.pending}>Save budgets</button>
      </div>
    </form>
  );
}

/** A key's or an account's budgets: the bars, and the editor behind a button. */
export function Budgets(p: { api: Api; path: string; label: string; refresh?: number; onSaved?(): void }) {
  const [editing, setEditing] = useState(false);
  const [saved, setSaved] = useState(0);
  const list = useLoad((sig) => p.api.get(p.path, sig), [p.path, p.refresh, saved]);
  return (
    <Async state={list}>
      {(d: any) => (
        <div class="stack">
          <BudgetBars budgets={d.data} />
          {editing ? (
            <BudgetForm api={p.api} path={p.path} current={d.data} label={p.label} onSaved={() => { setEditing(false); setSaved((n) => n + 1); p.onSaved?.(); }} />
          ) : (
            <div><button type="button" class="secondary" onClick={() => setEditing(true)}>Edit budgets</button></div>
          )}
        </div>
      )}
    </Async>
  );
}

/** The account's price plan: which one, and a choice among the plans there are. */
export function PlanPicker(p: { api: Api; accountId: string; current: string | null; onDone(): void }) {
  const plans = useLoad((sig) => p.api.get("/admin/plans", sig), []);
  const [choice, setChoice] = useState(p.current ?? "");
  const save = useAction(async () => {
    await p.api.put(`/admin/accounts/${encodeURIComponent(p.accountId)}/plan`, { plan: choice || null });
    p.onDone();
  });
  return (
    <Async state={plans}>
      {(d: any) => (
        <form class="stack" onSubmit={(e) => { e.preventDefault(); save.run(); }}>
          <label class="field">
            <span class="field-label">Price plan</span>
            <select name="plan" value={choice} onChange={(e) => setChoice((e.target as HTMLSelectElement).value)}>
              <option value="">List prices</option>
              {d.data.map((pl: any) => (
                <option value={pl.id}>{pl.name ?? pl.id} ({pl.adjustment_percent > 0 ? "+" : ""}{pl.adjustment_percent} %{Object.keys(pl.models).length ? `, ${Object.keys(pl.models).length} model prices` : ""})</option>
              ))}
            </select>
            <span class="field-hint">what the account pays: every price on the plan, rounded once per request</span>
          </label>
          <ErrorBox error={save.error} />
          <button type="submit" disabled={save.pending}>Save plan</button>
        </form>
      )}
    </Async>
  );
}
