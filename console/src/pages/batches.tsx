/** GET /admin/batches: every account's batches, newest first, with their progress; filters by account and status, cursor pages. */
import { useState } from "preact/hooks";
import type { Api } from "../api.ts";
import { BatchStatus } from "../components/batch-status.tsx";
import { Async, Card, Table } from "../components/ui.tsx";
import { fmtInt, fmtTime } from "../format.ts";
import { useLoad } from "../hooks.ts";

const PAGE = 50;
const STATUSES = ["validating", "in_progress", "finalizing", "completed", "failed", "expired", "cancelling", "cancelled"];

function Progress(p: { batch: any }) {
  const { total, completed, failed } = p.batch.request_counts;
  if (p.batch.status === "validating") return <span class="muted">reading the input file…</span>;
  if (!total) return <span class="muted">—</span>;
  const done = completed + failed;
  return (
    <div class="progress-row">
      <progress max={total} value={done} aria-label={`Progress of ${p.batch.id}`} />
      <span style={{ whiteSpace: "nowrap" }}>{fmtInt(done)} / {fmtInt(total)} ({Math.floor((done / total) * 100)}%){failed > 0 && <span class="muted"> · {fmtInt(failed)} failed</span>}</span>
    </div>
  );
}

export function Batches(p: { api: Api }) {
  const [form, setForm] = useState({ account: "", status: "" });
  const [applied, setApplied] = useState(form);
  const [cursors, setCursors] = useState<string[]>([]);
  const qs = new URLSearchParams({ limit: String(PAGE) });
  if (applied.account.trim()) qs.set("account", applied.account.trim());
  if (applied.status) qs.set("status", applied.status);
  const after = cursors[cursors.length - 1];
  if (after) qs.set("after", after);
  // running batches' progress moves: reread every 5 s (one query, 50 rows)
  const list = useLoad((sig) => p.api.get(`/admin/batches?${qs}`, sig), [qs.toString()], { refreshMs: 5_000 });
  return (
    <>
      <div class="page-head"><h1>Batches</h1></div>
      <Card>
        <form class="filters" aria-label="Filter batches" onSubmit={(e) => { e.preventDefault(); setCursors([]); setApplied(form); }}>
          <input type="search" aria-label="Account id" placeholder="account id (acct_…)" value={form.account} onInput={(e) => setForm({ ...form, account: (e.target as HTMLInputElement).value })} />
          <select aria-label="Status" value={form.status} onChange={(e) => setForm({ ...form, status: (e.target as HTMLSelectElement).value })}>
            <option value="">Any status</option>
            {STATUSES.map((s) => <option value={s}>{s.replace("_", " ")}</option>)}
          </select>
          <button type="submit">Filter</button>
        </form>
      </Card>
      <Card>
        <Async state={list} empty={(d: any) => d.data.length === 0} emptyText="No batches match.">
          {(d: any) => (
            <>
              <Table label="Batches">
                <thead><tr><th>Batch</th><th>Account</th><th>Endpoint</th><th>Model</th><th>Status</th><th>Progress</th><th>Created</th></tr></thead>
                <tbody>
                  {d.data.map((b: any) => (
                    <tr key={b.id} data-batch={b.id}>
                      <td class="mono small">{b.id}</td>
                      <td><a href={`#/accounts/${encodeURIComponent(b.account_id)}`} class="mono small">{b.account_id}</a></td>
                      <td class="mono small">{b.endpoint}</td>
                      <td class="mono small">{b.model ?? <span class="muted" title="known while the batch's lines are kept (until it ends)">—</span>}</td>
                      <td><BatchStatus status={b.status} />{b.status === "failed" && b.errors?.data?.[0] && <div class="small muted">{b.errors.data[0].code}</div>}</td>
                      <td style={{ minWidth: "12rem" }}><Progress batch={b} /></td>
                      <td style={{ whiteSpace: "nowrap" }}>{fmtTime(b.created_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </Table>
              <div class="pager">
                <button type="button" class="secondary" disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))}>Newer</button>
                <button type="button" class="secondary" disabled={!d.has_more} onClick={() => setCursors([...cursors, d.last_id])}>Older</button>
              </div>
            </>
          )}
        </Async>
      </Card>
    </>
  );
}
