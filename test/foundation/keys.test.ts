import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { ADMIN_TOKEN, startTestServer, type TestServer } from "../support/harness.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.close());

const get = (path: string, key?: string) => fetch(s.url + path, { headers: key ? { authorization: `Bearer ${key}` } : {} });

describe("API key lifecycle", () => {
  test("create → use → revoke → 401 in the envelope", async () => {
    const c = await s.newClient();
    expect(c.key).toMatch(/^rl-[0-9A-Za-z]{40}$/);
    expect((await get("/v1/models", c.key)).status).toBe(200);

    const revoked = await s.admin(`/admin/keys/${c.keyId}/revoke`, { method: "POST" });
    expect(revoked.status).toBe(200);
    expect((await revoked.json()).revoked_at).toBeString();

    const res = await get("/v1/models", c.key);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: { message: "Invalid API key provided.", type: "authentication_error", param: null, code: "invalid_api_key" } });
  });

  test("missing, malformed and unknown keys are 401 invalid_api_key", async () => {
    for (const auth of [undefined, "Basic abc", "Bearer", "Bearer rl-doesnotexist0000000000000000000000000000", "Bearer sk-whatever"]) {
      const res = await fetch(s.url + "/v1/models", { headers: auth ? { authorization: auth } : {} });
      expect(res.status).toBe(401);
      const body = await res.json();
      expect(body.error.code).toBe("invalid_api_key");
      expect(body.error.type).toBe("authentication_error");
    }
  });

  test("the admin token sent to a /v1 route is told apart: 401 saying it is the admin token and which routes take it", async () => {
    const res = await get("/v1/models", ADMIN_TOKEN);
    expect(res.status).toBe(401);
    const { error } = await res.json();
    expect(error).toMatchObject({ type: "authentication_error", code: "invalid_api_key", param: null });
    expect(error.message).toBe("This is the admin token (REELAY_ADMIN_TOKEN): it works on /admin/* (and /metrics, and the console's operator view), not on /v1/*. Send an API key (rl-…) here: create one with POST /admin/accounts/{id}/keys.");
  });

  test("rotate: the old key stops working, the new one works with the same settings", async () => {
    const c = await s.newClient({ models: ["use-lite"] });
    const res = await s.admin(`/admin/keys/${c.keyId}/rotate`, { method: "POST" });
    expect(res.status).toBe(200);
    const rotated = await res.json();
    expect(rotated.key).not.toBe(c.key);
    expect(rotated.replaces).toBe(c.keyId);
    expect(rotated.allowed_models).toEqual(["use-lite"]);
    expect((await get("/v1/models", c.key)).status).toBe(401);
    const models = await (await get("/v1/models", rotated.key)).json();
    expect(models.data.map((m: { id: string }) => m.id)).toEqual(["use-lite"]);
  });

  test("keys are stored only as hashes; listing shows prefix and times, never the key", async () => {
    const c = await s.newClient();
    await get("/v1/models", c.key); // sets last_used_at
    const sql = postgres(s.databaseUrl!, { max: 1 });
    try {
      const [row] = await sql`SELECT * FROM api_keys WHERE id = ${c.keyId}`;
      expect(row!.hash).toBe(new Bun.CryptoHasher("sha256").update(c.key).digest("hex"));
      // no column of any table holds the key itself
      const dump = await sql`SELECT row_to_json(t)::text AS j FROM api_keys t`;
      expect(dump.some((r) => r.j.includes(c.key))).toBe(false);
      expect(dump.some((r) => r.j.includes(c.key.slice(0, 11)))).toBe(true); // visible prefix is stored
      await Bun.sleep(50);
      const [used] = await sql`SELECT last_used_at FROM api_keys WHERE id = ${c.keyId}`;
      expect(used!.last_used_at).not.toBeNull();
    } finally {
      await sql.end();
    }
    const list = await (await s.admin(`/admin/accounts/${c.accountId}/keys`)).json();
    expect(list.data).toHaveLength(1);
    expect(list.data[0].prefix).toBe(c.key.slice(0, 11));
    expect(JSON.stringify(list)).not.toContain(c.key);
    expect(list.data[0]).not.toHaveProperty("hash");
  });
});

describe("admin API", () => {
  test("requires the admin token; client keys are refused", async () => {
    const c = await s.newClient();
    const none = await fetch(s.url + "/admin/accounts");
    expect(none.status).toBe(401);
    expect((await none.json()).error.type).toBe("authentication_error");
    const wrong = await fetch(s.url + "/admin/accounts", { headers: { authorization: "Bearer not-the-admin-token-at-all" } });
    expect(wrong.status).toBe(401);
    const client = await fetch(s.url + "/admin/accounts", { headers: { authorization: `Bearer ${c.key}` } });
    expect(client.status).toBe(403);
    expect((await client.json()).error.message).toContain("Client API keys cannot use the admin API");
    const create = await fetch(s.url + `/admin/accounts/${c.accountId}/credits`, { method: "POST", headers: { authorization: `Bearer ${c.key}`, "content-type": "application/json" }, body: JSON.stringify({ amount: 5 }) });
    expect(create.status).toBe(403);
  });

  test("grant credits and read the balance", async () => {
    const c = await s.newClient({ credits: 1_000 });
    const r = await s.admin(`/admin/accounts/${c.accountId}/credits`, { body: { amount: 2_500, reason: "invoice 7" } });
    expect(r.status).toBe(200);
    expect((await r.json()).balance).toBe(3_500);
    const acct = await (await get("/v1/account", c.key)).json();
    expect(acct).toMatchObject({ object: "account", id: c.accountId, balance: 3_500, held: 0, available: 3_500 });
  });
});

describe("GET /v1/models", () => {
  test("lists only the models the key may use", async () => {
    const all = await s.newClient();
    const ids = async (key: string) => (await (await get("/v1/models", key)).json()).data.map((m: { id: string }) => m.id).sort();
    expect(await ids(all.key)).toEqual(["preview-motion", "stories260k", "use-lite"]);
    const onlyVideo = await s.newClient({ scopes: ["video"] });
    expect(await ids(onlyVideo.key)).toEqual(["preview-motion"]);
    const onlyLite = await s.newClient({ models: ["use-lite"] });
    expect(await ids(onlyLite.key)).toEqual(["use-lite"]);
    const res = await get("/v1/models/preview-motion", onlyLite.key);
    expect(res.status).toBe(404);
    expect((await res.json()).error.code).toBe("model_not_found");
    const one = await (await get("/v1/models/use-lite", onlyLite.key)).json();
    expect(one).toMatchObject({ id: "use-lite", object: "model", owned_by: "reelay" });
  });
});
