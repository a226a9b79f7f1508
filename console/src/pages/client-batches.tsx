/** The client's batches (/v1/batches) as cards: status, progress (lines done of total), errors, the result files; running ones can be cancelled. */
import { useEffect, useState } from "preact/hooks";
import type { Api } from "../api.ts";
import { fmtInt, fmtTime } from "../format.ts";
import { useAction } from "../hooks.ts";
import { BatchStatus, RUNNING_BATCH as RUNNING } from "../components/batch-status.tsx";
import { ErrorBox, Loading } from "../components/ui.tsx";

/** Save a file's bytes (the Bearer header goes with the request, so a plain link cannot do it). */
async function download(api: Api, id: string, name: string) {
  const blob = await (await api.fetch(`/v1/files/${encodeURIComponent(id)}/content`, {})).blob();
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

function BatchCard(p: { api: Api; batch: any; onChanged(): void }) {
  const b = p.batch;
  const counts = b.request_counts ?? { total: 0, completed: 0, failed: 0 };
  const done = counts.completed + counts.failed;
  const running = RUNNING.includes(b.status);
  const cancel = useAction(async () => {
    await p.api.post(`/v1/batches/${encodeURIComponent(b.id)}/cancel`);
    p.onChanged();
  });
  const save = useAction(async (id: string, name: string) => download(p.api, id, name));
  return (
    <article class="job" aria-label={`Batch ${b.id}`}>
      <header>
        <span style={{ whiteSpace: "nowrap", flexShrink: 0 }}><BatchStatus status={b.status} /></span>
        <span class="mono small" style={{ overflowWrap: "anywhere", minWidth: 0 }}>{b.id}</span>
      </header>
      <dl>
        <dt>Endpoint</dt><dd class="mono small">{b.endpoint}</dd>
        <dt>Requests</dt><dd data-testid="batch-counts">{b.status === "validating" ? "reading the input file…" : `${fmtInt(done)} / ${fmtInt(counts.total)} done · ${fmtInt(counts.completed)} ok · ${fmtInt(counts.failed)} failed`}</dd>
        <dt>Created</dt><dd>{fmtTime(b.created_at)}</dd>
        {b.completed_at && <><dt>Completed</dt><dd>{fmtTime(b.completed_at)}</dd></>}
        {running && b.expires_at && <><dt>Expires</dt><dd>{fmtTime(b.expires_at)}</dd></>}
        {b.metadata && Object.keys(b.metadata).length > 0 && <><dt>Metadata</dt><dd class="mono small">{Object.entries(b.metadata).map(([k, v]) => `${k}=${v}`).join(" · ")}</dd></>}
      </dl>
      {running && (
        <div class="progress-row">
          <progress max={Math.max(1, counts.total)} value={done} aria-label="progress" />
          <span>{counts.total ? `${Math.floor((done / counts.total) * 100)}%` : b.status.replace("_", " ")}</span>
        </div>
      )}
      {b.status === "failed" && b.errors?.data?.length > 0 && (
        <div class="error" role="note">
          {b.errors.data.slice(0, 5).map((e: any) => <div>{e.line ? `Line ${e.line}: ` : ""}<strong>{e.code}</strong>: {e.message}</div>)}
          {b.errors.data.length > 5 && <div>… {b.errors.data.length - 5} more</div>}
        </div>
      )}
      <div class="row">
        {b.output_file_id && <button type="button" class="secondary" disabled={save.pending} onClick={() => save.run(b.output_file_id, `${b.id}_output.jsonl`)}>Download output</button>}
        {b.error_file_id && <button type="button" class="secondary" disabled={save.pending} onClick={() => save.run(b.error_file_id, `${b.id}_errors.jsonl`)}>Download errors</button>}
        {(b.status === "validating" || b.status === "in_progress") && <button type="button" class="secondary danger-text" disabled={cancel.pending} onClick={() => cancel.run()}>Cancel batch</button>}
      </div>
      <ErrorBox error={cancel.error ?? save.error} />
    </article>
  );
}

/** A paginated ("Load more") list that refreshes while batches are running. */
export function ClientBatches(p: { api: Api }) {
  const [batches, setBatches] = useState<any[] | null>(null);
  const [more, setMore] = useState<string | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [tick, setTick] = useState(0);
  const load = async (after: string | null, signal?: AbortSignal) => {
    const q = new URLSearchParams({ limit: "24" });
    if (after) q.set("after", after);
    const page = await p.api.get(`/v1/batches?${q}`, signal);
    return { data: page.data as any[], next: page.has_more ? (page.last_id as string) : null };
  };
  useEffect(() => {
    const ctl = new AbortController();
    load(null, ctl.signal).then((r) => { setBatches(r.data); setMore(r.next); setError(null); }, (e) => !ctl.signal.aborted && setError(e));
    return () => ctl.abort();
  }, [tick]);
  const anyRunning = batches?.some((b) => RUNNING.includes(b.status));
  useEffect(() => {
    if (!anyRunning) return;
    const id = setTimeout(() => setTick((t) => t + 1), 1500);
    return () => clearTimeout(id);
  }, [anyRunning, batches]);
  const loadMore = useAction(async () => {
    const r = await load(more);
    setBatches([...(batches ?? []), ...r.data]);
    setMore(r.next);
  });
  let body;
  if (error && !batches) body = <ErrorBox error={error} onRetry={() => setTick((t) => t + 1)} />;
  else if (!batches) body = <Loading />;
  else if (!batches.length) body = <p class="empty">No batches yet. Create one with the Batch API: upload a JSONL file to <code>/v1/files</code> with purpose <code>batch</code>, then <code>POST /v1/batches</code>.</p>;
  else body = (
    <>
      <div class="jobs">{batches.map((b) => <BatchCard key={b.id} api={p.api} batch={b} onChanged={() => setTick((t) => t + 1)} />)}</div>
      {more && <button type="button" class="secondary" disabled={loadMore.pending} onClick={() => loadMore.run()}>Load more</button>}
      <ErrorBox error={loadMore.error} />
    </>
  );
  return (
    <>
      <div class="page-head"><h1>Batches</h1></div>
      {body}
    </>
  );
}
