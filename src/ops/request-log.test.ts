import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { startFakeOpenAI, type FakeOpenAI } from "../../test/fakes/openai-upstream.ts";
import { createTestDatabase, dropDatabase } from "../../test/support/harness.ts";
import { newClientOn, spawnServer, type ChildServer } from "../../test/support/child-server.ts";

const UPSTREAM_KEY = "sk-upstream-SECRET-" + crypto.randomUUID().replaceAll("-", "");

describe("request logs of a running reelay process", () => {
  let databaseUrl: string;
  let fake: FakeOpenAI;
  let proc: ChildServer;
  beforeAll(async () => {
    fake = await startFakeOpenAI({ tokens: 4 });
    databaseUrl = await createTestDatabase();
    const modelsFile = `/tmp/reelay-ops-models-${process.pid}-${Date.now()}.json`;
    writeFileSync(modelsFile, JSON.stringify({
      builtins: false,
      models: [{ id: "chat-test", plugin: "openai-compatible", options: { baseUrl: fake.url, apiKeyEnv: "UPSTREAM_KEY" }, pricing: { inputPerMillion: 1_000_000, outputPerMillion: 2_000_000 } }],
    }));
    proc = await spawnServer({ DATABASE_URL: databaseUrl, REELAY_MODELS_FILE: modelsFile, UPSTREAM_KEY });
  }, 60_000);
  afterAll(async () => {
    await proc.stop();
    await fake.stop();
    await dropDatabase(databaseUrl);
  }, 30_000);

  test("one JSON line per request with id, route, status, latency, key prefix and account; never the key or the upstream key", async () => {
    const c = await newClientOn(proc);
    const auth = { authorization: `Bearer ${c.key}`, "content-type": "application/json" };
    // reelay names every request itself (x-request-id); the log line carries the same id
    const ids: string[] = [];
    const seen = (r: Response) => (ids.push(r.headers.get("x-request-id")!), r);
    const models = seen(await fetch(proc.url + "/v1/models", { headers: auth }));
    expect(models.status).toBe(200);
    const chat = seen(await fetch(proc.url + "/v1/chat/completions", {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ model: "chat-test", messages: [{ role: "user", content: "hi" }] }),
    }));
    await chat.arrayBuffer();
    // the upstream key was really in play: the fake upstream received it
    expect(fake.requests.some((r) => r.headers.authorization === `Bearer ${UPSTREAM_KEY}`)).toBe(true);
    // a wrong key that shares the real key's prefix: logged neither as a key nor as the prefix of another account
    const wrong = c.key.slice(0, -4) + "zzzz";
    expect(seen(await fetch(proc.url + "/v1/models", { headers: { authorization: `Bearer ${wrong}` } })).status).toBe(401);
    // the key in a query string is not logged either (the path is logged without it)
    seen(await fetch(proc.url + `/v1/models?api_key=${c.key}`, { headers: auth }));

    await Bun.sleep(300); // pino writes asynchronously
    await proc.stop();
    const out = proc.stdout();
    const lines = proc.logLines().filter((l) => l.msg === "request");
    const byId = (id: string) => lines.find((l) => l.requestId === id);

    expect(byId(ids[0]!)).toMatchObject({ method: "GET", route: "/v1/models", path: "/v1/models", status: 200, keyPrefix: c.prefix, accountId: c.accountId });
    expect(typeof byId(ids[0]!)!.latencyMs).toBe("number");
    expect(byId(ids[1]!)).toMatchObject({ method: "POST", route: "/v1/chat/completions", status: chat.status, keyPrefix: c.prefix, accountId: c.accountId });
    expect(byId(ids[2]!)).toMatchObject({ route: "/v1/models", status: 401 });
    expect(byId(ids[2]!)!.accountId).toBeUndefined();
    expect(byId(ids[3]!)).toMatchObject({ path: "/v1/models", status: 200 });
    // exactly one line per request
    for (const id of ids) expect(lines.filter((l) => l.requestId === id).length).toBe(1);

    expect(out).toContain(c.prefix);
    expect(out).not.toContain(c.key);
    expect(out).not.toContain(wrong);
    expect(out).not.toContain(c.key.slice(c.prefix.length)); // not even the secret part alone
    expect(out).not.toContain(UPSTREAM_KEY);
    expect(out).not.toContain(UPSTREAM_KEY.slice(-16));
  }, 30_000);
});
