/** Video jobs as cards: status, progress, error; completed ones play inline; running ones can be cancelled. */
import { useEffect, useState } from "preact/hooks";
import type { Api } from "../api.ts";
import { fmtTime } from "../format.ts";
import { useAction } from "../hooks.ts";
import { VideoFromJob } from "./video.tsx";
import { Badge, ErrorBox, Loading, statusTone } from "./ui.tsx";

export interface JobPaths {
  list(query: string): string;
  one(id: string): string;
  cancel(id: string): string;
}

function JobCard(p: { api: Api; job: any; paths: JobPaths; showAccount?: boolean; onChanged(): void }) {
  const j = p.job;
  const [play, setPlay] = useState(false);
  const cancel = useAction(async () => {
    await p.api.post(p.paths.cancel(j.id));
    p.onChanged();
  });
  const running = j.status === "queued" || j.status === "processing";
  const playable = j.status === "completed" && (j.has_result ?? true) && (!j.expires_at || j.expires_at * 1000 > Date.now());
  return (
    <article class="job" aria-label={`Video job ${j.id}`}>
      <header>
        <Badge tone={statusTone(j.status)}>{j.status}</Badge>
        <span class="mono small">{j.id}</span>
      </header>
      <dl>
        <dt>Model</dt><dd>{j.model}</dd>
        <dt>Length</dt><dd>{j.seconds} s · {j.size}</dd>
        {p.showAccount && <><dt>Account</dt><dd><a href={`#/accounts/${j.account_id}`} class="mono small">{j.account_id}</a></dd></>}
        <dt>Submitted</dt><dd>{fmtTime(j.created_at)}</dd>
        {j.prompt && <><dt>Prompt</dt><dd class="prompt">{j.prompt}</dd></>}
      </dl>
      {running && (
        <div class="progress-row">
          <progress max={1} value={j.progress ?? undefined} aria-label="progress" />
          <span>{j.progress !== null && j.progress !== undefined ? `${Math.round(j.progress * 100)}%` : j.status}</span>
        </div>
      )}
      {j.status === "failed" && j.error && <div class="error" role="note"><strong>{j.error.code}</strong>: {j.error.message}</div>}
      {playable && (play ? <VideoFromJob api={p.api} path={p.paths.one(j.id)} label={`Video of job ${j.id}`} /> : <button type="button" onClick={() => setPlay(true)}>Play video</button>)}
      {j.status === "completed" && !playable && <p class="muted small">The result has expired.</p>}
      {running && <button type="button" class="secondary danger-text" disabled={cancel.pending} onClick={() => cancel.run()}>Cancel job</button>}
      <ErrorBox error={cancel.error} />
    </article>
  );
}

/** A filtered, paginated ("Load more") list that refreshes while jobs are running. */
export function JobList(p: { api: Api; paths: JobPaths; filter: string; showAccount?: boolean; refresh?: number }) {
  const [jobs, setJobs] = useState<any[] | null>(null);
  const [more, setMore] = useState<string | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [tick, setTick] = useState(0);
  const load = async (after: string | null, signal?: AbortSignal) => {
    const q = new URLSearchParams(p.filter);
    q.set("limit", "24");
    if (after) q.set("after", after);
    const page = await p.api.get(p.paths.list(q.toString()), signal);
    return { data: page.data as any[], next: page.has_more ? (page.last_id as string) : null };
  };
  useEffect(() => {
    const ctl = new AbortController();
    load(null, ctl.signal).then((r) => { setJobs(r.data); setMore(r.next); setError(null); }, (e) => !ctl.signal.aborted && setError(e));
    return () => ctl.abort();
  }, [p.filter, tick, p.refresh]);
  const anyRunning = jobs?.some((j) => j.status === "queued" || j.status === "processing");
  useEffect(() => {
    if (!anyRunning) return;
    const id = setTimeout(() => setTick((t) => t + 1), 1500);
    return () => clearTimeout(id);
  }, [anyRunning, jobs]);
  const loadMore = useAction(async () => {
    const r = await load(more);
    setJobs([...(jobs ?? []), ...r.data]);
    setMore(r.next);
  });
  if (error && !jobs) return <ErrorBox error={error} onRetry={() => setTick((t) => t + 1)} />;
  if (!jobs) return <Loading />;
  if (!jobs.length) return <p class="empty">No video jobs match.</p>;
  return (
    <>
      <div class="jobs">{jobs.map((j) => <JobCard key={j.id} api={p.api} job={j} paths={p.paths} showAccount={p.showAccount} onChanged={() => setTick((t) => t + 1)} />)}</div>
      {more && <button type="button" class="secondary" disabled={loadMore.pending} onClick={() => loadMore.run()}>Load more</button>}
      <ErrorBox error={loadMore.error} />
    </>
  );
}
