/**
 * Every state-changing CLI command (the real `bun src/main.ts …` against the server's Postgres
 * database) writes one audit-log row in the change's transaction, as the host user who ran it: the
 * running server's GET /admin/audit-log shows it like an admin route's, and the command prints the
 * entry's JSON log line (on stderr: stdout is the command's answer). A refused command writes neither.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../../test/support/harness.ts";

const SECRET_KEY = "cli-audit-secret-key-0123456789abcdefghij";
let s: TestServer;

beforeAll(async () => {
  s = await startTestServer({ REELAY_SECRET_KEY: SECRET_KEY, REELAY_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8" });
}, 60_000);
afterAll(() => s?.close());

async function cli(...args: string[]) {
  const p = Bun.spawn(["bun", "src/main.ts", ...args], {
    cwd: import.meta.dir + "/../..",
    env: { ...process.env, DATABASE_URL: s.databaseUrl!, REELAY_SECRET_KEY: SECRET_KEY, REELAY_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8", REELAY_LOG_LEVEL: "error", REELAY_PLUGINS_DIR: "/nonexistent-reelay-plugins" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) return { code, err, json: null as any };
  return { code, err, json: JSON.parse(out) };
}

/** the CLI's entries, oldest first */
const cliEntries = async () => {
  const page = (await (await s.admin("/admin/audit-log?limit=500")).json()) as { data: any[] };
  return page.data.filter((e) => e.actor.type === "cli").reverse();
};

test("each state-changing command is one audit entry with before/after, never a secret", async () => {
  /** each command's audit log lines (stderr, JSON, whatever the CLI's log level), in order */
  const lines: any[] = [];
  const ok = async (...args: string[]) => {
    const r = await cli(...args);
    expect(`${args.slice(0, 2).join(" ")}: ${r.code}`).toBe(`${args.slice(0, 2).join(" ")}: 0`);
    const logged = r.err.split("\n").filter(Boolean).map((l) => JSON.parse(l));
    expect(logged.map((l) => l.msg)).toEqual(["audit"]);
    lines.push(logged[0]);
    return r.json;
  };
  const acct = await ok("accounts", "create", "--name", "cli-audit", "--credits", "1000000");
  await ok("accounts", "limits", acct.id, "--rpm", "60");
  const key = await ok("keys", "create", "--account", acct.id, "--name", "k", "--budget", "day:500000");
  await ok("keys", "limits", key.id, "--tpm", "1000");
  const rotated = await ok("keys", "rotate", key.id);
  await ok("keys", "revoke", rotated.id);
  await ok("credits", "grant", "--account", acct.id, "--amount", "250000", "--reason", "invoice 9");
  await ok("credits", "adjust", "--account", acct.id, "--amount=-50000", "--reason", "refund");
  await ok("budgets", "set", "--account", acct.id, "--budget", "month:900000");
  await ok("budgets", "clear", "--account", acct.id);
  await ok("plans", "set", "half", "--adjust=-50");
  await ok("plans", "set", "half", "--name", "Half", "--adjust=-50");
  await ok("accounts", "plan", acct.id, "half");
  await ok("accounts", "plan", acct.id, "none");
  await ok("plans", "delete", "half");
  const hook = await ok("webhooks", "create", "--account", acct.id, "--url", "http://127.0.0.1:9/hook");
  await ok("webhooks", "enable", hook.id);
  const secret = await ok("webhooks", "secret", "--account", acct.id);
  await ok("webhooks", "delete", hook.id);

  const entries = await cliEntries();
  expect(entries.map((e) => `${e.action} ${e.target.type}:${e.target.id}`)).toEqual([
    `account.create account:${acct.id}`,
    `account.limits account:${acct.id}`,
    `key.create key:${key.id}`,
    `key.limits key:${key.id}`,
    `key.rotate key:${key.id}`,
    `key.revoke key:${rotated.id}`,
    `credits.grant account:${acct.id}`,
    `credits.adjust account:${acct.id}`,
    `budgets.set account:${acct.id}`,
    `budgets.set account:${acct.id}`,
    "plan.create plan:half",
    "plan.update plan:half",
    `account.plan account:${acct.id}`,
    `account.plan account:${acct.id}`,
    "plan.delete plan:half",
    `webhook_endpoint.create webhook_endpoint:${hook.id}`,
    `webhook_endpoint.update webhook_endpoint:${hook.id}`,
    `webhook_secret.rotate account:${acct.id}`,
    `webhook_endpoint.delete webhook_endpoint:${hook.id}`,
  ]);
  // one JSON log line per entry, from the CLI process too (its logger is at warn): the entry as the API shows it
  expect(lines.map((l) => l.audit)).toEqual(entries);
  for (const l of lines) expect(l.level).toBe(30);
  for (const e of entries) {
    expect(e.actor).toEqual({ type: "cli", id: null, name: expect.stringMatching(/^cli \(.+\)$/) });
    expect(e.request_id).toBeNull();
    expect(e.client_ip).toBeNull();
  }
  const by = (action: string) => entries.filter((e) => e.action === action);
  expect(by("account.create")[0].after).toMatchObject({ id: acct.id, name: "cli-audit", balance: 1_000_000, initial_credits: 1_000_000 });
  expect(by("account.limits")[0]).toMatchObject({ before: { requests_per_minute: null }, after: { requests_per_minute: 60 } });
  expect(by("key.create")[0].after.budgets).toEqual([expect.objectContaining({ period: "day", limit: 500_000 })]);
  expect(by("key.limits")[0]).toMatchObject({ before: { tokens_per_minute: null }, after: { tokens_per_minute: 1000 } });
  expect(by("key.rotate")[0].after).toMatchObject({ id: rotated.id, replaces: key.id });
  expect(by("key.revoke")[0]).toMatchObject({ before: { revoked_at: null }, after: { revoked_at: expect.any(String) } });
  expect(by("credits.grant")[0]).toMatchObject({ before: { balance: 1_000_000 }, after: { balance: 1_250_000, amount: 250_000, reason: "invoice 9" } });
  expect(by("credits.adjust")[0]).toMatchObject({ before: { balance: 1_250_000 }, after: { balance: 1_200_000, amount: -50_000, reason: "refund" } });
  expect(by("budgets.set").map((e) => [e.before.length, e.after.length])).toEqual([[0, 1], [1, 0]]);
  expect(by("account.plan").map((e) => [e.before.plan, e.after.plan])).toEqual([[null, "half"], ["half", null]]);
  expect(by("plan.update")[0]).toMatchObject({ before: { name: null }, after: { name: "Half", adjustment_percent: -50 } });
  expect(by("webhook_endpoint.update")[0].after.id).toBe(hook.id);
  const all = JSON.stringify(entries);
  for (const secretValue of [key.key, rotated.key, hook.secret, secret.secret]) {
    expect(typeof secretValue).toBe("string");
    expect(all).not.toContain(secretValue);
  }
}, 120_000);

test("a refused command writes no entry (same transaction)", async () => {
  const acct = (await cli("accounts", "create", "--name", "cli-refused", "--credits", "1000")).json;
  const before = (await cliEntries()).length;
  const refused = [
    await cli("credits", "adjust", "--account", acct.id, "--amount=-5000", "--reason", "too much"),
    await cli("keys", "revoke", "key_missing"),
    await cli("webhooks", "replay", "whd_missing"),
    await cli("webhooks", "create", "--account", acct.id, "--url", "http://169.254.169.254/latest"),
    await cli("plans", "delete", "no-such-plan"),
  ];
  expect(refused.map((r) => r.code)).toEqual([1, 1, 1, 1, 0]);
  for (const r of refused) expect(r.err).not.toContain('"msg":"audit"');
  expect((await cliEntries()).length).toBe(before);
  expect((await (await s.admin(`/admin/accounts/${acct.id}`)).json() as any).balance).toBe(1000);
}, 60_000);
