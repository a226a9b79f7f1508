/**
 * SIGTERM: reelay stops accepting connections, lets in-flight requests finish (here a chat
 * completion whose upstream takes 1.5 s), settles their money, closes the database and exits 0.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { startFakeOpenAI } from "../fakes/openai-upstream.ts";
import { createTestDatabase, dropDatabase } from "../support/harness.ts";
import { newClientOn, spawnServer } from "../support/child-server.ts";

const cleanup: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
});

test("SIGTERM finishes the in-flight request, refuses new ones, and exits 0", async () => {
  const fake = await startFakeOpenAI({ tokens: 4 });
  cleanup.push(() => fake.stop());
  fake.behave({ delayHeadersMs: 1500 });
  const dir = mkdtempSync(join(tmpdir(), "reelay-shutdown-"));
  writeFileSync(join(dir, "models.json"), JSON.stringify({ builtins: false, models: [{ id: "slow-chat", plugin: "openai-compatible", options: { baseUrl: fake.url }, pricing: { inputPerMillion: 1_000_000, outputPerMillion: 1_000_000 }, maxOutputTokens: 8 }] }));
  const databaseUrl = await createTestDatabase();
  cleanup.push(() => dropDatabase(databaseUrl));
  const server = await spawnServer({ DATABASE_URL: databaseUrl, REELAY_MODELS_FILE: join(dir, "models.json"), REELAY_SHUTDOWN_GRACE_MS: "10000" });
  cleanup.push(() => server.stop());
  const c = await newClientOn(server, 1_000_000);

  const inFlight = fetch(server.url + "/v1/chat/completions", {
    method: "POST",
    headers: { authorization: `Bearer ${c.key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "slow-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 4 }),
  });
  while (fake.requests.length === 0) await Bun.sleep(20); // the upstream has the request
  server.proc.kill("SIGTERM");
  await Bun.sleep(200);

  // no new connections while draining
  await expect(fetch(server.url + "/healthz")).rejects.toThrow();

  const res = await inFlight;
  expect(res.status).toBe(200);
  const body = (await res.json()) as { choices: Array<{ message: { content: string } }>; usage: { prompt_tokens: number; completion_tokens: number } };
  expect(body.choices[0]!.message.content).toBe(" one two three four");
  expect(await server.proc.exited).toBe(0);

  // the request was settled before the database closed: charged exactly its usage, nothing held
  const sql = postgres(databaseUrl, { max: 1 });
  try {
    const [acct] = await sql`SELECT balance::int, held::int FROM accounts WHERE id = ${c.accountId}`;
    expect(acct).toEqual({ balance: 1_000_000 - body.usage.prompt_tokens - body.usage.completion_tokens, held: 0 });
  } finally {
    await sql.end();
  }
}, 60_000);
