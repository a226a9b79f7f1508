/**
 * Budgets and price plans in the console, in a real browser against reelay on the real Postgres,
 * each action checked twice (the page, then the admin API):
 *  - the operator sets an account's monthly budget in USD on the account page and sees its bar;
 *    traffic moves the bar; a key's daily budget is set from the account's key list;
 *  - the operator puts the account on a price plan;
 *  - the client (signed in with the key) sees the key's and the account's bars and its plan.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync, readFileSync } from "node:fs";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { startFakeOpenAI, type FakeOpenAI } from "../../test/fakes/openai-upstream.ts";
import { ADMIN_TOKEN, startTestServer, type TestServer } from "../../test/support/harness.ts";
import { scriptedEnv } from "../../test/videos/support.ts";
import { buildConsole } from "../build.ts";
import { formatUsd } from "../src/money.ts";
import { join } from "node:path";
import { launchBrowser, see, shot, SHOTS, watch, type Watched } from "./browser.ts";

let fake: FakeOpenAI;
let s: TestServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let w: Watched;
let acct = "";
let key = { id: "", key: "", prefix: "" };
const COST = 11 * 3 + 8 * 15; // a chat of 11 + 8 tokens at $3 / $15 per million

beforeAll(async () => {
  await buildConsole();
  fake = await startFakeOpenAI({ tokens: 8 });
  const env = scriptedEnv([{ id: "clip" }]);
  const models = JSON.parse(readFileSync(env.REELAY_MODELS_FILE!, "utf8"));
  models.models.push({ id: "chat", plugin: "openai-compatible", options: { baseUrl: fake.url }, pricing: { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000 }, maxOutputTokens: 8 });
  models.plans = [{ id: "gold", name: "Gold", adjustmentPercent: -20 }];
  writeFileSync(env.REELAY_MODELS_FILE!, JSON.stringify(models));
  s = await startTestServer(env);
  acct = ((await (await s.admin("/admin/accounts", { body: { name: "budget-co", amount: 50_000_000 } })).json()) as any).id;
  key = (await (await s.admin(`/admin/accounts/${acct}/keys`, { body: { name: "main" } })).json()) as any;
  browser = await launchBrowser();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  w = watch(context, s.url);
  page = await context.newPage();
  page.setDefaultTimeout(15_000);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await s?.close();
  await fake?.stop();
});

const chat = async () => {
  const res = await fetch(`${s.url}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json" }, body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: "Say three words." }], max_tokens: 8 }) });
  await res.arrayBuffer();
  return res.status;
};

async function signIn(token: string, heading: string) {
  await page.goto(s.url + "/console");
  await page.getByLabel("Admin token or API key").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: heading }).first().waitFor();
}

test("operator: an account budget and a key budget set in USD, bars that follow the traffic, a price plan", async () => {
  w.step("operator");
  await signIn(ADMIN_TOKEN, "Overview");
  await page.goto(`${s.url}/console#/accounts/${acct}`);
  const card = page.locator("section.card").filter({ has: page.getByRole("heading", { name: "Account budgets" }) });
  await see(card, "No budgets");
  await card.getByRole("button", { name: "Edit budgets" }).click();
  await card.getByRole("button", { name: "Add a budget" }).click();
  await card.getByLabel("Budget 1 limit in USD").fill("0.01");
  await card.getByLabel("Budget 1 timezone").fill("Europe/Paris");
  await card.getByRole("button", { name: "Save budgets" }).click();
  await see(card.getByTestId("budget-bar"), "Account · Monthly (Europe/Paris)");
  await see(card.getByTestId("budget-left"), "$0.01 left");
  const set = ((await (await s.admin(`/admin/accounts/${acct}/budgets`)).json()) as any).data;
  expect(set).toEqual([expect.objectContaining({ period: "month", limit: 10_000, timezone: "Europe/Paris", thresholds: [80, 100] })]);

  // traffic: the bar follows (after a refresh)
  expect([await chat(), await chat()]).toEqual([200, 200]);
  await page.getByRole("button", { name: "Refresh" }).click();
  await see(card.getByTestId("budget-left"), `${formatUsd(10_000 - 2 * COST)} left`);

  // a key's daily budget, from the account's key list
  await page.getByRole("button", { name: `Budgets of key ${key.prefix}` }).click();
  const row = page.locator("tr.key-budgets");
  await row.getByRole("button", { name: "Edit budgets" }).click();
  await row.getByRole("button", { name: "Add a budget" }).click();
  await row.getByLabel("Budget 1 period").selectOption("day");
  await row.getByLabel("Budget 1 limit in USD").fill("0.000153");
  await row.getByRole("button", { name: "Save budgets" }).click();
  await see(row.getByTestId("budget-bar"), "Key · Daily (UTC)");
  const keyBudgets = ((await (await s.admin(`/admin/keys/${key.id}/budgets`)).json()) as any).data;
  expect(keyBudgets).toEqual([expect.objectContaining({ period: "day", limit: COST })]);
  expect(await chat()).toBe(200);
  expect(await chat()).toBe(402);

  // the price plan
  const plan = page.locator("section.card").filter({ has: page.getByRole("heading", { name: "Price plan" }) });
  await plan.getByLabel("Price plan").selectOption("gold");
  // the option's text shows at once; the plan is the account's when the save's PUT has answered
  const saved = page.waitForResponse((r) => r.request().method() === "PUT" && r.url().endsWith(`/admin/accounts/${acct}/plan`));
  await plan.getByRole("button", { name: "Save plan" }).click();
  expect((await saved).status()).toBe(200);
  await see(plan, "Gold (-20 %)");
  expect(((await (await s.admin(`/admin/accounts/${acct}`)).json()) as any).plan).toBe("gold");
  await shot(page, "budgets-operator");
  await page.locator("div.grid-2").filter({ has: card }).screenshot({ path: join(SHOTS, "budgets.png") });
  expect(w.errors).toEqual([]);
  expect(w.foreign).toEqual([]);
}, 90_000);

test("client: the key's and the account's windows as bars, and the plan", async () => {
  w.step("client");
  s.deps.auth.evictAccount(acct);
  await context.clearCookies();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  w = watch(page.context(), s.url);
  await signIn(key.key, "Usage and credits");
  const card = page.locator("section.card").filter({ has: page.getByRole("heading", { name: "Budgets" }) });
  await see(card, "Key · Daily (UTC)");
  await see(card, "Account · Monthly (Europe/Paris)");
  await see(card, "100 % reached");
  await see(page.locator(".stat").filter({ hasText: "Price plan" }), "gold");
  await shot(page, "budgets-client");
  expect(w.foreign).toEqual([]);
}, 60_000);
