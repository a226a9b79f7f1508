import type { Api } from "../api.ts";
import { JobList, type JobPaths } from "../components/jobs.tsx";

const PATHS: JobPaths = {
  list: (q) => `/v1/videos/generations?${q}`,
  one: (id) => `/v1/videos/generations/${encodeURIComponent(id)}`,
  cancel: (id) => `/v1/videos/generations/${encodeURIComponent(id)}/cancel`,
};

export function ClientJobs(p: { api: Api }) {
  return (
    <>
      <div class="page-head"><h1>Video jobs</h1><a class="button" href="#/playground/video">New video</a></div>
      <JobList api={p.api} paths={PATHS} filter="" />
    </>
  );
}
