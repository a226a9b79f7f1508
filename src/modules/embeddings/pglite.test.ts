/** The embedded default: no DATABASE_URL, no models file → PGlite and the built-in use-lite model. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import OpenAI from "openai";
import { startTestServer, type TestServer } from "../../../test/support/harness.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({}, { pglite: true });
}, 120_000); // PGlite's first initdb takes ~10-20 s on a loaded 2-core machine
afterAll(async () => {
  await s?.close();
});

test("one embeddings call on PGlite is served and billed", async () => {
  expect(s.deps.database.kind).toBe("pglite");
  const c = await s.newClient({ credits: 1_000_000 });
  const client = new OpenAI({ apiKey: c.key, baseURL: `${s.url}/v1`, maxRetries: 0 });
  const res = await client.embeddings.create({ model: "use-lite", input: ["What is your age?", "How old are you?"] });
  expect(res.data.map((d) => d.embedding.length)).toEqual([512, 512]);
  const tokens = res.usage.prompt_tokens;
  expect(tokens).toBeGreaterThan(0);
  const price = s.deps.registry.get("use-lite")!.pricing.inputPerMillion!;
  const cost = Math.ceil((tokens * price) / 1_000_000);
  const headers = { authorization: `Bearer ${c.key}` };
  const acct = (await (await fetch(`${s.url}/v1/account`, { headers })).json()) as { balance: number; held: number };
  expect(acct).toMatchObject({ balance: 1_000_000 - cost, held: 0 });
  const usage = (await (await fetch(`${s.url}/v1/usage`, { headers })).json()) as { data: Array<Record<string, unknown>> };
  expect(usage.data[0]).toMatchObject({ kind: "embeddings", model: "use-lite", prompt_tokens: tokens, cost, status: 200 });
});
