import { useState } from "preact/hooks";
import type { Api } from "../api.ts";
import { Async, Card, Table } from "../components/ui.tsx";
import { fmtTime } from "../format.ts";
import { useLoad } from "../hooks.ts";

const PAGE = 50;

/** GET /admin/audit-log: newest first, filters by actor, action and target, cursor paging. */
export function AuditLog(p: { api: Api }) {
  const [form, setForm] = useState({ actor: "", action: "", target: "" });
  const [applied, setApplied] = useState(form);
  const [cursors, setCursors] = useState<number[]>([]);
  const before = cursors[cursors.length - 1];
  const qs = new URLSearchParams({ limit: String(PAGE) });
  for (const [k, v] of Object.entries(applied)) if (v.trim()) qs.set(k, v.trim());
  if (before) qs.set("before", String(before));
  const list = useLoad((sig) => p.api.get(`/admin/audit-log?${qs}`, sig), [qs.toString()]);
  const input = (k: keyof typeof form, label: string, placeholder: string) => (
    <input aria-label={label} placeholder={placeholder} value={form[k]} onInput={(e) => setForm({ ...form, [k]: (e.target as HTMLInputElement).value })} />
  );
  return (
    <>
      <div class="page-head"><h1>Audit log</h1></div>
      <Card title="Every change made through the admin API and the console">
        <form class="row" role="search" onSubmit={(e) => { e.preventDefault(); setCursors([]); setApplied(form); }}>
          {input("actor", "Actor", "op_… or bootstrap")}
          {input("action", "Action", "key.* or credits.grant")}
          {input("target", "Target", "acct_…, key_…")}
          <button type="submit">Filter</button>
        </form>
        <Async state={list} empty={(d: any) => d.data.length === 0} emptyText="No entries.">
          {(d: any) => (
            <>
              <Table label="Audit log">
                <thead><tr><th>Time</th><th>Actor</th><th>Action</th><th>Target</th><th>Change</th><th>Request</th></tr></thead>
                <tbody>
                  {d.data.map((e: any) => (
                    <tr>
                      <td>{fmtTime(e.at)}</td>
                      <td>{e.actor.name}<div class="mono muted">{e.actor.type}{e.actor.id ? ` ${e.actor.id}` : ""}</div></td>
                      <td class="mono">{e.action}</td>
                      <td class="mono">{e.target.type} {e.target.id ?? ""}</td>
                      <td class="mono small">{e.before !== null && <div>before: {JSON.stringify(e.before)}</div>}{e.after !== null && <div>after: {JSON.stringify(e.after)}</div>}</td>
                      <td class="mono small">{e.request_id}<div class="muted">{e.client_ip}</div></td>
                    </tr>
                  ))}
                </tbody>
              </Table>
              <div class="pager">
                <button type="button" class="secondary" disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))}>Newer</button>
                <button type="button" class="secondary" disabled={!d.has_more} onClick={() => setCursors([...cursors, d.next_before])}>Older</button>
              </div>
            </>
          )}
        </Async>
      </Card>
    </>
  );
}
