import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import parsePrometheusTextFormat, { type ParsedFamily } from "parse-prometheus-text-format";
import postgres from "postgres";
import { ADMIN_TOKEN, startTestServer, type TestServer } from "../../test/support/harness.ts";

const METRICS_TOKEN = "metrics-token-0123456789abcdef";

describe("/metrics", () => {
  let s: TestServer;
  beforeAll(async () => {
    // a 60 s scheduler poll keeps the scheduler away from the job rows this suite inserts
    s = await startTestServer({ REELAY_METRICS_TOKEN: METRICS_TOKEN, REELAY_SCHEDULER_POLL_MS: "60000" });
  }, 30_000);
  afterAll(() => s.close());

  /**
   * The parser merges every series of a labelled histogram into one (it only handles unlabelled
   * ones), so histograms are also parsed a second time retyped as untyped: their _bucket, _sum and
   * _count series then come out as separate families with their labels.
   */
  const scrape = async (): Promise<ParsedFamily[]> => {
    const r = await fetch(s.url + "/metrics", { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("text/plain; version=0.0.4");
    const text = await r.text();
    const typed = parsePrometheusTextFormat(text);
    const histograms = typed.filter((f) => f.type === "HISTOGRAM").map((f) => f.name);
    const series = parsePrometheusTextFormat(text.replace(/^# TYPE (\S+) histogram$/gm, "# TYPE $1 untyped")).filter((f) => histograms.some((h) => f.name.startsWith(h + "_")));
    const merged = new Map<string, ParsedFamily>();
    for (const f of series) merged.set(f.name, { ...f, metrics: [...(merged.get(f.name)?.metrics ?? []), ...f.metrics] });
    return [...typed, ...merged.values()];
  };
  const family = (all: ParsedFamily[], name: string) => {
    const f = all.find((x) => x.name === name);
    if (!f) throw new Error(`metric ${name} missing; have ${all.map((x) => x.name).join(", ")}`);
    return f;
  };
  const sample = (all: ParsedFamily[], name: string, labels: Record<string, string> = {}) =>
    all.find((x) => x.name === name)?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  const value = (all: ParsedFamily[], name: string, labels: Record<string, string> = {}) => Number(sample(all, name, labels)?.value ?? 0);

  test("401 envelope without the metrics token (and the admin token is not it when REELAY_METRICS_TOKEN is set)", async () => {
    const c = await s.newClient();
    for (const authorization of [undefined, `Bearer ${ADMIN_TOKEN}`, `Bearer ${c.key}`, "Bearer wrong"]) {
      const r = await fetch(s.url + "/metrics", { headers: authorization ? { authorization } : {} });
      expect(r.status).toBe(401);
      const body = (await r.json()) as { error: { type: string; code: string } };
      expect(body.error).toMatchObject({ type: "authentication_error", code: "invalid_api_key" });
    }
  });

  test("parses as Prometheus text and counters move by the traffic sent", async () => {
    const c = await s.newClient();
    const limited = await s.newClient({ limits: { requests_per_minute: 1 } });
    const before = await scrape();
    for (let i = 0; i < 3; i++) expect((await fetch(s.url + "/v1/models", { headers: { authorization: `Bearer ${c.key}` } })).status).toBe(200);
    const statuses = [];
    for (let i = 0; i < 2; i++) statuses.push((await fetch(s.url + "/v1/models", { headers: { authorization: `Bearer ${limited.key}` } })).status);
    expect(statuses).toEqual([200, 429]);
    expect((await fetch(s.url + "/v1/nope", { headers: { authorization: `Bearer ${c.key}` } })).status).toBe(404);
    const after = await scrape();

    const ok = { route: "/v1/models", method: "GET", status: "200" };
    expect(value(after, "reelay_http_requests_total", ok) - value(before, "reelay_http_requests_total", ok)).toBe(4);
    const refused = { route: "/v1/models", method: "GET", status: "429" };
    expect(value(after, "reelay_http_requests_total", refused) - value(before, "reelay_http_requests_total", refused)).toBe(1);
    const unmatched = { route: "unmatched", status: "404" };
    expect(value(after, "reelay_http_requests_total", unmatched) - value(before, "reelay_http_requests_total", unmatched)).toBe(1);
    const rej = { limit: "requests", scope: "key" };
    expect(value(after, "reelay_rate_limit_rejections_total", rej) - value(before, "reelay_rate_limit_rejections_total", rej)).toBe(1);

    expect(family(after, "reelay_http_request_duration_seconds").type).toBe("HISTOGRAM");
    const route = { route: "/v1/models", method: "GET" };
    expect(value(after, "reelay_http_request_duration_seconds_count", route) - value(before, "reelay_http_request_duration_seconds_count", route)).toBe(5);
    expect(value(after, "reelay_http_request_duration_seconds_bucket", { ...route, le: "+Inf" })).toBe(value(after, "reelay_http_request_duration_seconds_count", route));

    for (const name of ["process_resident_memory_bytes", "nodejs_heap_size_used_bytes"]) expect(value(after, name)).toBeGreaterThan(0);
    expect(sample(after, "nodejs_eventloop_lag_seconds", { quantile: "0.99" })).toBeDefined();
    expect(sample(after, "reelay_rate_limiter_degraded", { backend: "memory" })?.value).toBe("0");
  });

  test("telemetry from the feature modules shows up: upstream latency/errors, tokens and credits by model, job transitions", async () => {
    const before = await scrape();
    s.deps.telemetry.upstream({ plugin: "openai-compatible", model: "m1", ms: 120, outcome: "ok" });
    s.deps.telemetry.upstream({ plugin: "openai-compatible", model: "m1", ms: 900, outcome: "error", errorKind: "timeout" });
    s.deps.telemetry.charged({ model: "m1", kind: "chat", micros: 1234, promptTokens: 10, completionTokens: 20 });
    s.deps.telemetry.charged({ model: "v1", kind: "video", micros: 150_000, seconds: 5 });
    s.deps.telemetry.videoTransition({ jobId: "vid_x", model: "v1", from: "queued", to: "processing", accountId: "acct_x" });
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string>) => value(after, name, labels) - value(before, name, labels);
    expect(delta("reelay_upstream_errors_total", { plugin: "openai-compatible", model: "m1", kind: "timeout" })).toBe(1);
    for (const [outcome, seconds] of [["ok", 0.12], ["error", 0.9]] as const) {
      const labels = { plugin: "openai-compatible", model: "m1", outcome };
      expect(delta("reelay_upstream_duration_seconds_count", labels)).toBe(1);
      expect(delta("reelay_upstream_duration_seconds_sum", labels)).toBeCloseTo(seconds, 6);
      expect(delta("reelay_upstream_duration_seconds_bucket", { ...labels, le: "1" })).toBe(1);
    }
    expect(delta("reelay_credits_charged_micros_total", { model: "m1", kind: "chat" })).toBe(1234);
    expect(delta("reelay_credits_charged_micros_total", { model: "v1", kind: "video" })).toBe(150_000);
    expect(delta("reelay_tokens_total", { model: "m1", type: "prompt" })).toBe(10);
    expect(delta("reelay_tokens_total", { model: "m1", type: "completion" })).toBe(20);
    expect(delta("reelay_video_seconds_total", { model: "v1" })).toBe(5);
    expect(delta("reelay_video_job_transitions_total", { model: "v1", from: "queued", to: "processing" })).toBe(1);
  });

  test("queue depth, oldest queued job, scheduler lag and open holds are read from the database at scrape time", async () => {
    const c = await s.newClient();
    const sql = postgres(s.databaseUrl!, { max: 1, onnotice: () => {} });
    try {
      await sql`INSERT INTO video_jobs (id, account_id, model, status, prompt, seed, seconds, width, height, created_at, next_run_at)
                VALUES ('vid_metrics_a', ${c.accountId}, 'preview-motion', 'queued', 'p', 1, 5, 480, 832, now() - interval '40 seconds', now() - interval '25 seconds'),
                       ('vid_metrics_b', ${c.accountId}, 'preview-motion', 'queued', 'p', 1, 5, 480, 832, now() - interval '5 seconds', now() + interval '1 hour'),
                       ('vid_metrics_c', ${c.accountId}, 'preview-motion', 'completed', 'p', 1, 5, 480, 832, now() - interval '1 day', now() - interval '1 day')`;
      await sql`INSERT INTO holds (id, account_id, ref, amount, state) VALUES ('hold_m1', ${c.accountId}, 'req_m1', 5000, 'open'), ('hold_m2', ${c.accountId}, 'req_m2', 7000, 'settled')`;
      const m = await scrape();
      expect(value(m, "reelay_video_queue_depth")).toBe(2);
      expect(value(m, "reelay_video_queue_oldest_age_seconds")).toBeGreaterThanOrEqual(40);
      expect(value(m, "reelay_video_queue_oldest_age_seconds")).toBeLessThan(60);
      expect(value(m, "reelay_scheduler_lag_seconds")).toBeGreaterThanOrEqual(25);
      expect(value(m, "reelay_scheduler_lag_seconds")).toBeLessThan(40);
      expect(value(m, "reelay_open_holds")).toBe(1);
      expect(value(m, "reelay_open_holds_micros")).toBe(5000);
    } finally {
      await sql.end();
    }
  });
});
