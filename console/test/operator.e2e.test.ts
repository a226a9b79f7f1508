/**
 * The operator's actions in a real browser against reelay on the real Postgres, each checked twice:
 * what the page shows, and what the API or the database holds afterwards.
 *
 *  - Overview: the time range (1 h / 24 h / 7 d) and the model filter change the figures and the
 *    charts; the video queue, oldest job, open holds and upstream failures are the database's; every
 *    series with data is drawn (canvas pixels of its colour).
 *  - Accounts: search; adjust with a reason; rate limits; the ledger paged older and newer.
 *  - Keys: rotate (the new key works, the old one no longer) and revoke.
 *  - Video jobs: filter by account, model and status; a failed job shows its error; cancel a
 *    queued job (its hold is released).
 *
 * Traffic is real (chat through the fake OpenAI upstream, one model of it failing with 500; video
 * jobs on the scripted test plugin: one completes, one fails, one runs for minutes and keeps a
 * second one queued). History older than an hour cannot be waited for: a third account gets usage
 * rows stamped 3 hours and 3 days ago, written to usage_records as billing would.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import postgres from "postgres";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { startFakeOpenAI, type FakeOpenAI } from "../../test/fakes/openai-upstream.ts";
import { ADMIN_TOKEN, startTestServer, type TestServer } from "../../test/support/harness.ts";
import { client, pngBase64, scriptedEnv } from "../../test/videos/support.ts";
import { formatUsd } from "../src/money.ts";
import { buildConsole } from "../build.ts";
import { chartInk, launchBrowser, see, shot, watch, type Watched } from "./browser.ts";

const PRICING = { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000 };

let fake: FakeOpenAI;
let s: TestServer;
let db: postgres.Sql;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let w: Watched;
const A = { id: "", key: "" };
const B = { id: "", key: "" };
let history = "";
const jobs = { done: "", broken: "", running: "", queued: "" };

async function chat(key: string, model: string) {
  const res = await fetch(`${s.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
  });
  await res.arrayBuffer();
  return res.status;
}

async function account(name: string, credits: number) {
  const res = await s.admin("/admin/accounts", { body: { name, credits } });
  return ((await res.json()) as any).id as string;
}

async function key(accountId: string, name: string) {
  return (await (await s.admin(`/admin/accounts/${accountId}/keys`, { body: { name } })).json()) as { id: string; key: string; prefix: string };
}

beforeAll(async () => {
  await buildConsole();
  fake = await startFakeOpenAI();
  fake.behave({ tokens: 5 });
  fake.behave({ status: 500, errorMessage: "upstream exploded" }, { model: "chat-bad" });
  const env = scriptedEnv([
    { id: "clip-fast", options: { durationMs: 100 } },
    { id: "clip-broken", options: { fail: { code: "nsfw_rejected", message: "the provider refused the content" } } },
    // one slot, busy for 10 minutes: a second job stays queued
    { id: "clip-slow", options: { durationMs: 600_000, maxConcurrency: 1 } },
  ]);
  const models = JSON.parse(readFileSync(env.REELAY_MODELS_FILE!, "utf8"));
  for (const id of ["chat-good", "chat-bad"]) models.models.push({ id, plugin: "openai-compatible", options: { baseUrl: fake.url }, pricing: PRICING, maxOutputTokens: 64 });
  writeFileSync(env.REELAY_MODELS_FILE!, JSON.stringify(models));
  s = await startTestServer({ ...env, REELAY_SCHEDULER_POLL_MS: "50" });
  db = postgres(s.databaseUrl!, { max: 2, onnotice: () => {} });

  A.id = await account("acme-alpha", 20_000_000);
  A.key = (await key(A.id, "alpha-main")).key;
  B.id = await account("acme-beta", 20_000_000);
  B.key = (await key(B.id, "beta-main")).key;
  history = await account("zeta-history", 0);

  const img = pngBase64();
  const submit = async (k: string, model: string) => {
    const res = await client(s.url, k).submit({ model, prompt: `a ${model} clip`, image: img, seconds: 1 });
    const body = (await res.json()) as any;
    if (res.status !== 202) throw new Error(`submit ${model}: ${res.status} ${JSON.stringify(body)}`);
    return body.id as string;
  };
  jobs.done = await submit(A.key, "clip-fast");
  jobs.broken = await submit(A.key, "clip-broken");
  jobs.running = await submit(B.key, "clip-slow");
  await client(s.url, A.key).waitFinal(jobs.done);
  await client(s.url, A.key).waitFinal(jobs.broken);
  for (let i = 0; ; i++) {
    const [r] = await db`SELECT status FROM video_jobs WHERE id = ${jobs.running}`;
    if (r!.status === "processing") break;
    if (i > 200) throw new Error("the slow job never started");
    await Bun.sleep(50);
  }
  jobs.queued = await submit(B.key, "clip-slow");
  expect([await chat(A.key, "chat-good"), await chat(A.key, "chat-good"), await chat(B.key, "chat-bad"), await chat(B.key, "chat-bad")]).toEqual([200, 200, 502, 502]);

  const row = (ago: number, cost: number) =>
    db`INSERT INTO usage_records (account_id, ref, kind, model, plugin, prompt_tokens, completion_tokens, cost, status, latency_ms, created_at)
       VALUES (${history}, ${"req_hist_" + crypto.randomUUID()}, 'chat', 'chat-good', 'openai-compatible', 40, 10, ${cost}, 200, 900, ${new Date(Date.now() - ago)})`;
  for (let i = 0; i < 2; i++) await row(3 * 3_600_000, 270);
  for (let i = 0; i < 4; i++) await row(3 * 86_400_000, 270);

  browser = await launchBrowser();
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  w = watch(context, s.url);
  page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(s.url + "/console");
  await page.getByLabel("Admin token or API key").fill(ADMIN_TOKEN);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Overview" }).waitFor();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await db?.end();
  await s?.close();
  await fake?.stop();
});

const nav = (name: string) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name, exact: true }).click();
const stat = (label: string) => page.locator(".stat").filter({ has: page.locator(".stat-label", { hasText: new RegExp(`^${label}$`) }) });
const since = (ms: number) => new Date(Date.now() - ms);
const HOUR = 3_600_000;
const requests = (n: number, range: string) => new RegExp(`^Requests\\n${n}\\n${range}$`);

async function usageCount(from: Date, model?: string): Promise<number> {
  const [r] = model
    ? await db`SELECT count(*)::int AS n FROM usage_records WHERE created_at >= ${from} AND model = ${model}`
    : await db`SELECT count(*)::int AS n FROM usage_records WHERE created_at >= ${from}`;
  return r!.n;
}

/** Wait until the stat card shows what `expected()` (read from the database each time) says; the overview refreshes stats every 10 s. */
async function statMatches(label: string, expected: () => Promise<string>, timeoutMs = 25_000) {
  const end = Date.now() + timeoutMs;
  let want = "";
  let got = "";
  while (Date.now() < end) {
    want = await expected();
    got = await stat(label).innerText();
    if (got.includes(want)) return got;
    await Bun.sleep(250);
  }
  throw new Error(`stat ${label}: expected ${JSON.stringify(want)} in ${JSON.stringify(got)}`);
}

test("overview: time range and model filter change figures and charts; queue, holds and failures are the database's", async () => {
  // billing writes usage in batches (GET /v1/usage flushes them): the figures below are compared with what the database holds
  for (const k of [A.key, B.key]) await fetch(`${s.url}/v1/usage`, { headers: { authorization: `Bearer ${k}` } }).then((r) => r.arrayBuffer());
  const recent = await usageCount(since(HOUR));
  expect(recent).toBeGreaterThanOrEqual(6); // 4 chats, the completed and the failed job
  const day = await usageCount(since(24 * HOUR));
  const week = await usageCount(since(7 * 24 * HOUR));
  expect([day - recent, week - day]).toEqual([2, 4]);
  const timeRange = page.getByRole("radiogroup", { name: "Time range" });

  await page.reload(); // the figures of the page load before all usage had landed
  await see(stat("Requests"), requests(day, "24 hours"));
  await see(page.locator("figcaption").first(), "Requests per 15m");
  await timeRange.getByRole("radio", { name: "Last hour" }).click();
  expect(await timeRange.getByRole("radio", { name: "Last hour" }).getAttribute("aria-checked")).toBe("true");
  await see(stat("Requests"), requests(recent, "Last hour"));
  await see(page.locator("figcaption").first(), "Requests per 1m");
  await timeRange.getByRole("radio", { name: "7 days" }).click();
  await see(stat("Requests"), requests(week, "7 days"));
  await see(page.locator("figcaption").first(), "Requests per 1h");
  const credits = await db`SELECT coalesce(sum(cost), 0)::bigint AS c FROM usage_records WHERE created_at >= ${since(7 * 24 * HOUR)}`;
  await see(stat("Credits charged"), formatUsd(Number(credits[0]!.c)));

  // 7 days in hours: three separate buckets with data (3 days ago, 3 hours ago, now); every model with requests is drawn
  const perModel = await db`SELECT model, count(*)::int AS n FROM usage_records WHERE created_at >= ${since(7 * 24 * HOUR)} GROUP BY model ORDER BY model`;
  const drawn = await chartInk(page, "Requests per 1h");
  expect(Object.keys(drawn).sort()).toEqual(perModel.map((r) => r.model).sort());
  for (const r of perModel) expect({ model: r.model, drawn: drawn[r.model]! > 20 }).toEqual({ model: r.model, drawn: true });
  const latency = await chartInk(page, "Latency");
  expect(latency.p50).toBeGreaterThan(20);
  expect(latency.p99).toBeGreaterThan(20);
  expect((await chartInk(page, "Error rate"))["error rate"]).toBeGreaterThan(20);
  await shot(page, "operator-overview-7d-1280");

  // one model: its own figures, one series
  await timeRange.getByRole("radio", { name: "24 hours" }).click();
  await page.getByLabel("Model").selectOption("chat-bad");
  await see(stat("Requests"), requests(await usageCount(since(24 * HOUR), "chat-bad"), "24 hours"));
  await see(stat("Error rate"), "100.0%");
  const bad = await chartInk(page, "Requests per 15m");
  expect(Object.keys(bad)).toEqual(["all models"]);
  expect(bad["all models"]).toBeGreaterThan(20);
  expect((await chartInk(page, "Error rate"))["error rate"]).toBeGreaterThan(20);
  await page.getByLabel("Model").selectOption("");
  await see(stat("Requests"), requests(day, "24 hours"));

  // the point-in-time panels
  const queue = await db`SELECT count(*) FILTER (WHERE status = 'queued')::int AS q, count(*) FILTER (WHERE status = 'processing')::int AS p FROM video_jobs`;
  expect([queue[0]!.q, queue[0]!.p]).toEqual([1, 1]);
  await see(stat("Video queue"), "1 queued");
  await see(stat("Video queue"), "1 running · oldest job");
  const age = Number((await stat("Video queue").innerText()).match(/oldest job (?:(\d+) min )?(\d+) s/)!.slice(1).reduce((m, x) => (x === undefined ? m : m * 60 + Number(x)), 0));
  const [oldest] = await db`SELECT extract(epoch FROM now() - min(created_at))::float AS s FROM video_jobs WHERE status IN ('queued', 'processing')`;
  expect(age).toBeGreaterThan(0);
  expect(age).toBeLessThanOrEqual(Math.ceil(oldest!.s) + 1);
  const holds = async () => {
    const [h] = await db`SELECT count(*)::int AS n, coalesce(sum(amount), 0)::bigint AS amount FROM holds WHERE state = 'open'`;
    return `${h!.n}\n${formatUsd(Number(h!.amount))} reserved`;
  };
  await statMatches("Open holds", holds);
  const [jobHolds] = await db`SELECT count(*)::int AS n FROM holds WHERE state = 'open' AND ref IN (${jobs.running}, ${jobs.queued})`;
  expect(jobHolds!.n).toBe(2);

  const failures = page.getByRole("region", { name: "Upstream failures" });
  const failed = await db`SELECT plugin, model, count(*) FILTER (WHERE status >= 500 OR error_code IS NOT NULL)::int AS errors, count(*)::int AS requests FROM usage_records WHERE created_at >= ${since(24 * HOUR)} GROUP BY plugin, model HAVING count(*) FILTER (WHERE status >= 500 OR error_code IS NOT NULL) > 0 ORDER BY model`;
  expect(failed.map((f) => f.model)).toEqual(["chat-bad", "clip-broken"]);
  const rows = await failures.locator("tbody tr").allInnerTexts();
  expect(rows).toHaveLength(2);
  for (const f of failed) {
    const line = rows.find((r) => r.includes(f.model))!;
    expect(line.split("\t").slice(0, 5)).toEqual([f.plugin, f.model, String(f.requests), String(f.errors), "100.0%"]);
  }
  expect(rows.find((r) => r.includes("chat-bad"))).toMatch(/upstream_\w+ × 2/);
  expect(rows.find((r) => r.includes("clip-broken"))).toContain("nsfw_rejected × 1");
  await shot(page, "operator-overview-1280");
}, 90_000);

test("accounts: search by name and id, adjust with a reason, rate limits, ledger pages", async () => {
  for (let i = 1; i <= 24; i++) await s.admin(`/admin/accounts/${A.id}/credits`, { body: { amount: 1_000 + i, reason: `batch grant ${String(i).padStart(2, "0")}` } });
  await nav("Accounts");
  const search = page.getByRole("search");
  const list = page.getByRole("region", { name: "Accounts" });
  // the table shows the previous result until the search answers: wait for the expected rows
  const names = async (want: string[]) => {
    let got: string[] = [];
    for (let i = 0; i < 200; i++) {
      got = (await list.locator("tbody tr td:first-child").allInnerTexts()).sort();
      if (JSON.stringify(got) === JSON.stringify(want)) return;
      await Bun.sleep(50);
    }
    expect(got).toEqual(want);
  };
  await names(["acme-alpha", "acme-beta", "zeta-history"]);
  await search.getByLabel("Search accounts by name or id").fill("acme");
  await search.getByRole("button", { name: "Search" }).click();
  await names(["acme-alpha", "acme-beta"]);
  await search.getByLabel("Search accounts by name or id").fill(history);
  await search.getByRole("button", { name: "Search" }).click();
  await names(["zeta-history"]);
  await search.getByLabel("Search accounts by name or id").fill("no-such-account");
  await search.getByRole("button", { name: "Search" }).click();
  await see(page.locator(".empty"), "No account matches “no-such-account”.");
  await search.getByLabel("Search accounts by name or id").fill("alpha");
  await search.getByRole("button", { name: "Search" }).click();
  await names(["acme-alpha"]);
  await list.getByRole("link", { name: "acme-alpha" }).click();
  await page.getByRole("heading", { name: /acme-alpha/ }).waitFor();

  // adjust: a reason is required; the balance moves by exactly the amount
  const before = ((await (await s.admin(`/admin/accounts/${A.id}`)).json()) as any).balance as number;
  const adjust = page.locator("section").filter({ has: page.getByRole("heading", { name: "Adjust credits" }) });
  await adjust.getByLabel("Amount (USD, negative to take away)").fill("-1.25");
  await adjust.getByText("−$1.25 = -1,250,000 micro-dollars").waitFor();
  await adjust.getByRole("button", { name: "Adjust credits" }).click();
  await see(adjust.getByRole("alert"), "An adjustment needs a reason.");
  await adjust.getByLabel("Reason (required)").fill("refund correction");
  await adjust.getByRole("button", { name: "Adjust credits" }).click();
  await see(adjust.getByRole("status"), "Adjusted by −$1.25.");
  const after = (await (await s.admin(`/admin/accounts/${A.id}`)).json()) as any;
  expect(after.balance).toBe(before - 1_250_000);
  await see(stat("Balance"), formatUsd(after.balance));
  const [adj] = await db`SELECT kind, amount::bigint AS amount, reason FROM ledger WHERE account_id = ${A.id} AND kind = 'adjustment' ORDER BY id DESC LIMIT 1`;
  expect([adj!.kind, Number(adj!.amount), adj!.reason]).toEqual(["adjustment", -1_250_000, "refund correction"]);

  // rate limits: a bad value is refused; saved values are the account's; empty = the default
  const limits = page.locator("section").filter({ has: page.getByRole("heading", { name: "Rate limits" }) });
  await limits.getByLabel("Requests per minute").fill("ten");
  await limits.getByRole("button", { name: "Save limits" }).click();
  await see(limits.getByRole("alert"), "Requests per minute: a whole number, or empty for the default.");
  await limits.getByLabel("Requests per minute").fill("120");
  await limits.getByLabel("Concurrent video jobs").fill("3");
  await limits.getByRole("button", { name: "Save limits" }).click();
  for (let i = 0; ; i++) {
    const acct = (await (await s.admin(`/admin/accounts/${A.id}`)).json()) as any;
    if (acct.limits.requests_per_minute === 120) {
      expect(acct.limits).toMatchObject({ requests_per_minute: 120, tokens_per_minute: null, concurrent_video_jobs: 3 });
      break;
    }
    if (i > 100) throw new Error("limits not saved: " + JSON.stringify(acct.limits));
    await Bun.sleep(50);
  }
  const [lim] = await db`SELECT rpm_limit, tpm_limit, video_concurrency_limit FROM accounts WHERE id = ${A.id}`;
  expect(lim).toEqual({ rpm_limit: 120, tpm_limit: null, video_concurrency_limit: 3 });
  await page.reload();
  await page.getByRole("heading", { name: /acme-alpha/ }).waitFor();
  expect(await limits.getByLabel("Requests per minute").inputValue()).toBe("120");

  // the ledger, 20 entries a page, newest first; Older then Newer, as the API pages it (holds and
  // leases hidden, the console's default: reservations=false)
  const ledger = page.getByRole("region", { name: "Ledger" });
  const reasons = async () => ledger.locator("tbody tr td:nth-child(5)").allInnerTexts();
  // instances lease credit ahead and give it back in the background (ledger rows of their own):
  // compare once the newest page is the same in the page and in the API
  let page1: any;
  for (let i = 0; ; i++) {
    await see(ledger, "refund correction");
    page1 = (await (await s.admin(`/admin/accounts/${A.id}/ledger?limit=20&reservations=false`)).json()) as any;
    if (JSON.stringify(await reasons()) === JSON.stringify(page1.data.map((e: any) => e.reason))) break;
    if (i === 5) expect(await reasons()).toEqual(page1.data.map((e: any) => e.reason));
    await page.getByRole("button", { name: "Refresh" }).click();
    await Bun.sleep(300);
  }
  const page2 = (await (await s.admin(`/admin/accounts/${A.id}/ledger?limit=20&reservations=false&before=${page1.next_before}`)).json()) as any;
  expect(page1.has_more).toBe(true);
  expect(page2.data.length).toBeGreaterThan(0);
  const pager = page.locator(".pager").last();
  expect(await pager.getByRole("button", { name: "Newer" }).isDisabled()).toBe(true);
  await pager.getByRole("button", { name: "Older" }).click();
  await see(ledger, page2.data[0].reason);
  expect(await reasons()).toEqual(page2.data.map((e: any) => e.reason));
  expect(await pager.getByRole("button", { name: "Older" }).isDisabled()).toBe(!page2.has_more);
  await pager.getByRole("button", { name: "Newer" }).click();
  await see(ledger, "refund correction");
  expect(await reasons()).toEqual(page1.data.map((e: any) => e.reason));
  await shot(page, "operator-account-1280");
}, 90_000);

test("keys: rotate shows a new key that works while the old one stops; revoke stops a key", async () => {
  const rotating = await key(B.id, "rotate-me");
  const revoking = await key(B.id, "revoke-me");
  const as = (k: string) => fetch(`${s.url}/v1/account`, { headers: { authorization: `Bearer ${k}` } }).then((r) => r.status);
  expect([await as(rotating.key), await as(revoking.key)]).toEqual([200, 200]);
  await nav("Keys");
  const table = page.getByRole("region", { name: "API keys" });
  await see(table, rotating.prefix);

  await table.getByRole("button", { name: `Rotate key ${rotating.prefix}` }).click();
  await table.getByRole("button", { name: "Confirm rotate" }).click();
  const secret = (await page.getByTestId("new-key").textContent())!;
  expect(secret).toStartWith("rl-");
  expect(secret).not.toBe(rotating.key);
  expect([await as(secret), await as(rotating.key)]).toEqual([200, 401]);
  await page.getByRole("button", { name: "Done" }).click();
  await see(table, secret.slice(0, 11));

  await table.getByRole("button", { name: `Revoke key ${revoking.prefix}` }).click();
  await shot(page, "operator-keys-confirm-1280");
  await table.getByRole("button", { name: "Confirm revoke" }).click();
  for (let i = 0; (await table.innerText()).includes(revoking.prefix); i++) {
    if (i > 100) throw new Error("the revoked key is still listed");
    await Bun.sleep(50);
  }
  expect(await as(revoking.key)).toBe(401);
  const [row] = await db`SELECT revoked_at FROM api_keys WHERE id = ${revoking.id}`;
  expect(row!.revoked_at).toBeInstanceOf(Date);
  await page.getByLabel("Show revoked keys").check();
  const revokedRow = table.locator("tr").filter({ hasText: revoking.prefix });
  await see(revokedRow, "revoked");
  expect(await revokedRow.getByRole("button").count()).toBe(0);
}, 60_000);

test("video jobs: filter by account, model and status; a failed job shows its error; cancel a queued job", async () => {
  await nav("Video jobs");
  const filters = page.getByRole("form", { name: "Filter video jobs" });
  const cards = page.getByRole("article");
  const shown = async () => (await cards.evaluateAll((els: any[]) => els.map((e) => e.getAttribute("aria-label").replace("Video job ", "")))).sort();
  const apply = async (f: { account?: string; model?: string; status?: string }) => {
    await filters.getByLabel("Account id").fill(f.account ?? "");
    await filters.getByLabel("Model").selectOption(f.model ?? "");
    await filters.getByLabel("Status").selectOption(f.status ?? "");
    await filters.getByRole("button", { name: "Filter" }).click();
  };
  const ids = async (where: postgres.PendingQuery<postgres.Row[]>) => (await where).map((r) => r.id as string).sort();
  const waitShown = async (want: string[]) => {
    for (let i = 0; ; i++) {
      const got = await shown();
      if (JSON.stringify(got) === JSON.stringify(want)) return;
      if (i > 200) throw new Error(`cards ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
      await Bun.sleep(50);
    }
  };

  await waitShown(await ids(db`SELECT id FROM video_jobs`));
  await apply({ account: A.id });
  await waitShown(await ids(db`SELECT id FROM video_jobs WHERE account_id = ${A.id}`));
  expect(await shown()).toEqual([jobs.done, jobs.broken].sort());
  await apply({ model: "clip-slow" });
  await waitShown([jobs.running, jobs.queued].sort());
  await apply({ status: "failed" });
  await waitShown([jobs.broken]);
  const failed = cards.first();
  await see(failed.getByRole("note"), "nsfw_rejected: the provider refused the content");
  await see(failed, "failed");
  expect(await failed.getByRole("button", { name: "Play video" }).count()).toBe(0);
  await apply({ account: B.id, model: "clip-slow", status: "processing" });
  await waitShown([jobs.running]);
  await shot(page, "operator-videos-filtered-1280");

  await apply({ status: "queued" });
  await waitShown([jobs.queued]);
  await see(cards.first(), "queued");
  await cards.first().getByRole("button", { name: "Cancel job" }).click();
  await see(page.locator(".empty"), "No video jobs match.");
  const [job] = await db`SELECT status, error_code FROM video_jobs WHERE id = ${jobs.queued}`;
  expect(job).toEqual({ status: "failed", error_code: "cancelled" });
  const [hold] = await db`SELECT state FROM holds WHERE ref = ${jobs.queued}`;
  expect(hold!.state).toBe("released");
  const polled = (await (await client(s.url, B.key).get(jobs.queued)).json()) as any;
  expect(polled).toMatchObject({ status: "failed", error: { code: "cancelled" } });
  await apply({ status: "failed", model: "clip-slow" });
  await waitShown([jobs.queued]);
  await see(cards.first().getByRole("note"), "cancelled");

  await nav("Overview");
  await see(stat("Video queue"), "0 queued");
  await see(stat("Video queue"), "1 running · oldest job");
}, 60_000);

test("nothing left the server's origin and the console logged no errors", () => {
  expect(w.foreign).toEqual([]);
  expect(w.errors).toEqual([]);
});
