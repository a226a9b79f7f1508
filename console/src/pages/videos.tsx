import { useState } from "preact/hooks";
import type { Api } from "../api.ts";
import { JobList, type JobPaths } from "../components/jobs.tsx";
import { Card } from "../components/ui.tsx";
import { useLoad } from "../hooks.ts";

const PATHS: JobPaths = {
  list: (q) => `/admin/videos?${q}`,
  one: (id) => `/admin/videos/${encodeURIComponent(id)}`,
  cancel: (id) => `/admin/videos/${encodeURIComponent(id)}/cancel`,
};

export function Videos(p: { api: Api }) {
  const [account, setAccount] = useState("");
  const [model, setModel] = useState("");
  const [status, setStatus] = useState("");
  const [applied, setApplied] = useState("");
  const models = useLoad((sig) => p.api.get("/admin/models", sig), []);
  const apply = (e?: Event) => {
    e?.preventDefault();
    const q = new URLSearchParams();
    if (account.trim()) q.set("account", account.trim());
    if (model) q.set("model", model);
    if (status) q.set("status", status);
    setApplied(q.toString());
  };
  return (
    <>
      <div class="page-head"><h1>Video jobs</h1></div>
      <Card>
        <form class="filters" onSubmit={apply} aria-label="Filter video jobs">
          <input type="search" aria-label="Account id" placeholder="account id (acct_…)" value={account} onInput={(e) => setAccount((e.target as HTMLInputElement).value)} />
          <select aria-label="Model" value={model} onChange={(e) => setModel((e.target as HTMLSelectElement).value)}>
            <option value="">All models</option>
            {(models.data?.data ?? []).filter((m: any) => m.capabilities.includes("video")).map((m: any) => <option value={m.id}>{m.id}</option>)}
          </select>
          <select aria-label="Status" value={status} onChange={(e) => setStatus((e.target as HTMLSelectElement).value)}>
            <option value="">Any status</option>
            {["queued", "processing", "completed", "failed", "expired"].map((s) => <option value={s}>{s}</option>)}
          </select>
          <button type="submit">Filter</button>
        </form>
      </Card>
      <JobList api={p.api} paths={PATHS} filter={applied} showAccount />
    </>
  );
}
