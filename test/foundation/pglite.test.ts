import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../support/harness.ts";

// The embedded default: no DATABASE_URL, PGlite under a data directory, same migrations.
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({}, { pglite: true });
}, 120_000);
afterAll(() => s.close());

test("boots on PGlite, applies migrations, serves keys and models", async () => {
  const ready = await (await fetch(s.url + "/readyz")).json();
  expect(ready.checks[0]).toMatchObject({ name: "database", ok: true, detail: "pglite" });
  const c = await s.newClient({ credits: 1234 });
  const models = await (await fetch(s.url + "/v1/models", { headers: { authorization: `Bearer ${c.key}` } })).json();
  expect(models.data.length).toBeGreaterThan(0);
  const acct = await (await fetch(s.url + "/v1/account", { headers: { authorization: `Bearer ${c.key}` } })).json();
  expect(acct).toMatchObject({ balance: 1234, held: 0, available: 1234 });
  await s.admin(`/admin/keys/${c.keyId}/revoke`, { method: "POST" });
  expect((await fetch(s.url + "/v1/models", { headers: { authorization: `Bearer ${c.key}` } })).status).toBe(401);
});
