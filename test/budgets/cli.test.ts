/**
 * The CLI's budget and plan commands (the real `bun src/main.ts …` against the server's Postgres
 * database): a key created with budgets, a set replaced and shown, an account put on a plan made
 * with the CLI; the running server enforces them (a 402 budget_exceeded, the plan's prices on
 * GET /v1/models) — the CLI and the admin API are two doors to the same rows.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { budgetModels, CHAT_COST, CHAT, routes, startBudgetServer, type BudgetServer } from "./support.ts";

let fake: FakeOpenAI;
let server: BudgetServer;
let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  fake = await startFakeOpenAI({ tokens: 8 });
  const m = budgetModels(fake.url);
  dir = m.dir;
  env = m.env;
  server = await startBudgetServer(m.env);
}, 60_000);
afterAll(async () => {
  await server?.close();
  await fake?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function cli(...args: string[]) {
  const p = Bun.spawn(["bun", "src/main.ts", ...args], {
    cwd: import.meta.dir + "/../..",
    env: { ...process.env, ...env, DATABASE_URL: server.deps.config.databaseUrl!, REELAY_LOG_LEVEL: "error" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { out, err, code, json: () => JSON.parse(out) };
}

test("keys create --budget, budgets set / show / clear, plans set, accounts plan: the server enforces what the CLI wrote", async () => {
  const acct = (await cli("accounts", "create", "--name", "cli-budgets", "--credits", "10000000")).json();
  const made = await cli("keys", "create", "--account", acct.id, "--name", "k", "--budget", `day:${2 * CHAT_COST}`);
  expect(made.code).toBe(0);
  const key = made.json();
  expect(key.budgets).toEqual([expect.objectContaining({ period: "day", limit: 2 * CHAT_COST, timezone: "UTC" })]);
  for (let i = 0; i < 2; i++) expect((await routes.chat(server.url, key.key)).status).toBe(200);
  const refused = await routes.chat(server.url, key.key);
  expect(refused.status).toBe(402);
  expect(((await refused.json()) as any).error.code).toBe("budget_exceeded");

  const set = await cli("budgets", "set", "--key", key.id, "--budget", `day:${10 * CHAT_COST}`, "--budget", "month:90000:Europe/Paris:chat,chat-b", "--thresholds", "50,90");
  expect(set.code).toBe(0);
  const shown = (await cli("budgets", "show", "--key", key.id)).json();
  expect(shown.map((b: any) => [b.period, b.limit, b.timezone, b.models, b.thresholds]).sort()).toEqual([["day", 10 * CHAT_COST, "UTC", null, [50, 90]], ["month", 90_000, "Europe/Paris", ["chat", "chat-b"], [50, 90]]]);
  expect(shown.find((b: any) => b.period === "day").window.spent).toBe(2 * CHAT_COST); // the kept budget kept its count
  expect((await routes.chat(server.url, key.key)).status).toBe(200); // the server sees the raised limit at its next reservation

  const bad = await cli("budgets", "set", "--key", key.id, "--budget", "year:5");
  expect(bad.code).toBe(2);
  expect(bad.err).toContain("the period is one of day, week, month, lifetime");
  expect((await cli("budgets", "clear", "--key", key.id)).json()).toEqual([]);

  expect((await cli("plans", "set", "half", "--name", "Half", "--adjust=-50")).code).toBe(0);
  expect((await cli("accounts", "plan", acct.id, "half")).json()).toEqual({ account_id: acct.id, plan: "half" });
  expect((await cli("plans", "list")).json()).toEqual([{ id: "half", name: "Half", adjustment_percent: -50, models: {}, source: "api" }]);
  // the server reads stored plans every few seconds and keys' plans within its key cache time
  await server.deps.billing.plans.refresh();
  server.deps.auth.evictAccount(acct.id);
  const models = ((await (await fetch(`${server.url}/v1/models`, { headers: { authorization: `Bearer ${key.key}` } })).json()) as any).data;
  expect(models.find((m: any) => m.id === "chat").pricing).toEqual({ input_per_million: CHAT.input / 2, output_per_million: CHAT.output / 2, plan: "half" });
}, 120_000);
