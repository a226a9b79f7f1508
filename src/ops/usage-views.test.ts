import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { startTestServer, type TestServer } from "../../test/support/harness.ts";

const RANGE = "from=2025-03-01T00:00:00Z&to=2025-03-02T00:00:00Z";

describe("admin usage views (HTTP and CLI)", () => {
  let s: TestServer;
  let alpha: string;
  let beta: string;
  beforeAll(async () => {
    s = await startTestServer();
    const mk = async (name: string) => ((await (await s.admin("/admin/accounts", { body: { name } })).json()) as { id: string }).id;
    alpha = await mk("alpha");
    beta = await mk("beta");
    const sql = postgres(s.databaseUrl!, { max: 1, onnotice: () => {} });
    const row = (account: string, kind: string, model: string, plugin: string, at: string, o: { prompt?: number; completion?: number; seconds?: number; cost: number; status?: number; error?: string }) =>
      sql`INSERT INTO usage_records (account_id, ref, kind, model, plugin, prompt_tokens, completion_tokens, seconds, cost, status, error_code, created_at)
          VALUES (${account}, ${"req_" + crypto.randomUUID()}, ${kind}, ${model}, ${plugin}, ${o.prompt ?? null}, ${o.completion ?? null}, ${o.seconds ?? null}, ${o.cost}, ${o.status ?? 200}, ${o.error ?? null}, ${at})`;
    try {
      await row(alpha, "chat", "m-chat", "openai-compatible", "2025-03-01T01:00:00Z", { prompt: 100, completion: 50, cost: 300 });
      await row(alpha, "chat", "m-chat", "openai-compatible", "2025-03-01T02:00:00Z", { prompt: 10, completion: 0, cost: 0, status: 502, error: "upstream_error" });
      await row(alpha, "video", "v-1", "preview-video", "2025-03-01T03:00:00Z", { seconds: 5, cost: 150_000 });
      await row(beta, "embeddings", "e-1", "local-embeddings", "2025-03-01T04:00:00Z", { prompt: 1000, cost: 20 });
      await row(beta, "chat", "m-chat", "openai-compatible", "2025-03-01T05:00:00Z", { prompt: 20, completion: 30, cost: 100, status: 504, error: "upstream_timeout" });
      // outside the range on both sides: must not count ("to" is exclusive)
      await row(beta, "chat", "m-chat", "openai-compatible", "2025-02-28T23:59:59Z", { prompt: 999, cost: 999_999, status: 500 });
      await row(alpha, "chat", "m-chat", "openai-compatible", "2025-03-02T00:00:00Z", { prompt: 999, cost: 999_999, status: 500 });
    } finally {
      await sql.end();
    }
  }, 30_000);
  afterAll(() => s.close());

  const get = async (path: string) => {
    const r = await s.admin(path);
    expect(r.status).toBe(200);
    return (await r.json()) as { object: string; from: string; to: string; data: unknown[] };
  };

  const alphaTotals = { requests: 3, prompt_tokens: 110, completion_tokens: 50, tokens: 160, seconds: 5, credits: 150_300 };
  const betaTotals = { requests: 2, prompt_tokens: 1020, completion_tokens: 30, tokens: 1050, seconds: 0, credits: 120 };

  test("usage per account over a range, most credits first", async () => {
    const body = await get(`/admin/usage/accounts?${RANGE}`);
    expect(body.from).toBe("2025-03-01T00:00:00.000Z");
    expect(body.to).toBe("2025-03-02T00:00:00.000Z");
    expect(body.data).toEqual([
      { account_id: alpha, account_name: "alpha", ...alphaTotals },
      { account_id: beta, account_name: "beta", ...betaTotals },
    ]);
    expect((await get(`/admin/usage/accounts?${RANGE}&account=${beta}`)).data).toEqual([{ account_id: beta, account_name: "beta", ...betaTotals }]);
  });

  test("usage per model, top accounts, failing upstreams", async () => {
    expect((await get(`/admin/usage/models?${RANGE}`)).data).toEqual([
      { model: "v-1", kind: "video", requests: 1, prompt_tokens: 0, completion_tokens: 0, tokens: 0, seconds: 5, credits: 150_000 },
      { model: "m-chat", kind: "chat", requests: 3, prompt_tokens: 130, completion_tokens: 80, tokens: 210, seconds: 0, credits: 400 },
      { model: "e-1", kind: "embeddings", requests: 1, prompt_tokens: 1000, completion_tokens: 0, tokens: 1000, seconds: 0, credits: 20 },
    ]);
    expect((await get(`/admin/usage/top-accounts?${RANGE}&limit=1`)).data).toEqual([{ account_id: alpha, account_name: "alpha", ...alphaTotals }]);
    expect((await get(`/admin/usage/failing-upstreams?${RANGE}`)).data).toEqual([
      { plugin: "openai-compatible", model: "m-chat", requests: 3, errors: 2, client_errors: 0, error_rate: 0.6667, error_codes: { upstream_error: 1, upstream_timeout: 1 }, last_error_at: "2025-03-01T05:00:00.000Z" },
    ]);
    // the default range is the last 24 hours: none of the seeded rows
    expect((await get("/admin/usage/accounts")).data).toEqual([]);
  });

  test("admin token required; bad ranges are 400 with the param", async () => {
    const c = await s.newClient();
    expect((await fetch(s.url + `/admin/usage/accounts?${RANGE}`)).status).toBe(401);
    expect((await fetch(s.url + `/admin/usage/accounts?${RANGE}`, { headers: { authorization: `Bearer ${c.key}` } })).status).toBe(403);
    for (const [q, param] of [["from=yesterday", "from"], ["to=2025-13-45", "to"], ["from=2025-03-02&to=2025-03-01", "from"]] as const) {
      const r = await s.admin(`/admin/usage/models?${q}`);
      expect(r.status).toBe(400);
      expect(((await r.json()) as { error: { param: string; type: string } }).error).toMatchObject({ param, type: "invalid_request_error" });
    }
  });

  test("the CLI prints the same views", async () => {
    const cli = async (...args: string[]) => {
      const p = Bun.spawn(["bun", "src/main.ts", ...args], {
        cwd: new URL("../../", import.meta.url).pathname,
        env: { PATH: process.env.PATH ?? "", DATABASE_URL: s.databaseUrl!, REELAY_PLUGINS_DIR: "/nonexistent-reelay-plugins" },
        stdout: "pipe",
        stderr: "pipe",
      });
      const [out, err, code] = [await new Response(p.stdout).text(), await new Response(p.stderr).text(), await p.exited];
      return { out, err, code };
    };
    const range = ["--from", "2025-03-01T00:00:00Z", "--to", "2025-03-02T00:00:00Z"];
    const accounts = await cli("usage", "accounts", ...range);
    expect(accounts.code).toBe(0);
    expect(JSON.parse(accounts.out).data).toEqual([
      { account_id: alpha, account_name: "alpha", ...alphaTotals },
      { account_id: beta, account_name: "beta", ...betaTotals },
    ]);
    const failing = await cli("usage", "failing-upstreams", ...range);
    expect(JSON.parse(failing.out).data[0]).toMatchObject({ plugin: "openai-compatible", model: "m-chat", errors: 2 });
    const bad = await cli("usage", "models", "--from", "nope");
    expect(bad.code).toBe(1);
    expect(bad.err).toContain("'from' must be an ISO 8601 date");
  }, 60_000);
});
