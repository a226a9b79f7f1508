/**
 * The operator's Batches page in a real browser against reelay on the real Postgres and scheduler.
 * Two clients create batches through the real Files and Batch APIs (the official `openai` SDK): one
 * completes, one fails validation, one keeps running with one line of four done (its other lines'
 * upstream never answers). The operator opens Batches: each row's account (a link to the account),
 * endpoint, model, status and progress match GET /admin/batches; the status and account filters
 * narrow the table; the page fits a phone and its filters show keyboard focus.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import OpenAI from "openai";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { chatLine, startBatchServer, uploadBatchFile, waitForBatch, type BatchServer } from "../../test/batches/batch-server.ts";
import { ADMIN_TOKEN } from "../../test/support/harness.ts";
import { buildConsole } from "../build.ts";
import { launchBrowser, see, shot, watch, type Watched } from "./browser.ts";

// runs in the browser; this file's type context has no DOM lib
declare const document: any;
declare const getComputedStyle: (e: unknown) => { outlineStyle: string; outlineWidth: string };

let t: BatchServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let w: Watched;
const acct = { alpha: "", beta: "" };
const ids = { done: "", failed: "", running: "" };
let beta: OpenAI;

/** an account with `name` and an OpenAI client on a key of it */
async function client(name: string) {
  const a = (await (await t.s.admin("/admin/accounts", { body: { name, credits: 50_000_000 } })).json()) as { id: string };
  const k = (await (await t.s.admin(`/admin/accounts/${a.id}/keys`, { body: { name: "batch-key" } })).json()) as { key: string };
  return { id: a.id, openai: new OpenAI({ apiKey: k.key, baseURL: t.s.url + "/v1", maxRetries: 0 }) };
}

const batch = (openai: OpenAI, fileId: string) => openai.batches.create({ input_file_id: fileId, endpoint: "/v1/chat/completions", completion_window: "24h" });

beforeAll(async () => {
  await buildConsole();
  t = await startBatchServer();
  // chat-c's upstream never answers: the running batch stays at its chat-a line done
  t.fake.behave({ hang: true }, { model: "chat-c" });
  const alpha = await client("alpha-batches");
  const b = await client("beta-batches");
  [acct.alpha, acct.beta, beta] = [alpha.id, b.id, b.openai];
  ids.done = (await waitForBatch(alpha.openai, (await batch(alpha.openai, (await uploadBatchFile(alpha.openai, [chatLine(0), chatLine(1)])).id)).id)).id;
  ids.failed = (await waitForBatch(beta, (await batch(beta, (await uploadBatchFile(beta, [{ ...chatLine(0), url: "/v1/embeddings" }])).id)).id)).id;
  ids.running = (await batch(beta, (await uploadBatchFile(beta, [chatLine(0), chatLine(1, "chat-c"), chatLine(2, "chat-c"), chatLine(3, "chat-c")])).id)).id;
  for (const until = performance.now() + 30_000; ; await Bun.sleep(50)) {
    const r = await beta.batches.retrieve(ids.running);
    if (r.status === "in_progress" && r.request_counts?.completed === 1) break;
    if (performance.now() > until) throw new Error(`batch still ${r.status} ${JSON.stringify(r.request_counts)}`);
  }

  browser = await launchBrowser();
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  w = watch(context, t.s.url);
  page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(t.s.url + "/console");
  await page.getByLabel("Admin token or API key").fill(ADMIN_TOKEN);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Overview" }).waitFor();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  if (ids.running) await beta.batches.cancel(ids.running).catch(() => {});
  await t?.close();
});

const table = () => page.getByRole("region", { name: "Batches" });
const row = (id: string) => table().locator(`tr[data-batch="${id}"]`);
const shownIds = () => table().locator("tbody tr").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-batch")));

/** wait until the table lists exactly these batches, in this order */
async function shows(want: string[]) {
  const until = Date.now() + 15_000;
  for (let got: unknown = null; ; await Bun.sleep(50)) {
    got = await shownIds().catch(() => null);
    if (JSON.stringify(got) === JSON.stringify(want)) return;
    if (Date.now() > until) throw new Error(`table shows ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  }
}

test("operator: Batches lists every account's batches with account, endpoint, model, status and progress", async () => {
  w.step("batches list");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Batches", exact: true }).click();
  await page.getByRole("heading", { name: "Batches" }).waitFor();
  await shows([ids.running, ids.failed, ids.done]);

  const running = row(ids.running);
  await see(running, "in progress");
  await see(running, "1 / 4 (25%)");
  for (const text of [acct.beta, "/v1/chat/completions", "chat-a"]) await see(running, text);
  const bar = running.getByRole("progressbar", { name: `Progress of ${ids.running}` });
  expect([await bar.getAttribute("value"), await bar.getAttribute("max")]).toEqual(["1", "4"]);
  await see(row(ids.done), "2 / 2 (100%)");
  await see(row(ids.done), "completed");
  await see(row(ids.failed), "failed");
  await see(row(ids.failed), "invalid_url");

  // what the table shows is what the API says
  const api = (await (await t.s.admin("/admin/batches")).json()) as any;
  expect(api.data.map((b: any) => [b.id, b.account_id, b.status, b.request_counts])).toEqual([
    [ids.running, acct.beta, "in_progress", { total: 4, completed: 1, failed: 0 }],
    [ids.failed, acct.beta, "failed", { total: 0, completed: 0, failed: 0 }],
    [ids.done, acct.alpha, "completed", { total: 2, completed: 2, failed: 0 }],
  ]);
  await shot(page, "batches-1280");
}, 60_000);

test("operator: the status and account filters narrow the table", async () => {
  w.step("batches filters");
  const filters = page.getByRole("form", { name: "Filter batches" });
  await filters.getByLabel("Status").selectOption("failed");
  await filters.getByRole("button", { name: "Filter" }).click();
  await shows([ids.failed]);
  await filters.getByLabel("Status").selectOption("in_progress");
  await filters.getByRole("button", { name: "Filter" }).click();
  await shows([ids.running]);
  await filters.getByLabel("Status").selectOption("cancelled");
  await filters.getByRole("button", { name: "Filter" }).click();
  await see(page.locator("main"), "No batches match.");
  await filters.getByLabel("Status").selectOption("");
  await filters.getByLabel("Account id").fill(acct.alpha);
  await filters.getByRole("button", { name: "Filter" }).click();
  await shows([ids.done]);
  await filters.getByLabel("Account id").fill("");
  await filters.getByRole("button", { name: "Filter" }).click();
  await shows([ids.running, ids.failed, ids.done]);
}, 60_000);

test("operator: the filters take keyboard focus visibly; an account link opens the account", async () => {
  w.step("batches keyboard");
  const filters = page.getByRole("form", { name: "Filter batches" });
  await filters.getByLabel("Account id").focus();
  await page.keyboard.press("Tab");
  const focus = await page.evaluate(() => {
    const el = document.activeElement;
    const cs = getComputedStyle(el);
    return { label: el.getAttribute("aria-label"), outline: cs.outlineStyle, width: parseFloat(cs.outlineWidth) };
  });
  expect(focus.label).toBe("Status");
  expect(focus.outline).not.toBe("none");
  expect(focus.width).toBeGreaterThanOrEqual(2);
  // the status from the keyboard, then Enter on the Filter button
  await page.keyboard.press("ArrowDown"); // Any status → validating
  await page.keyboard.press("ArrowDown"); // → in progress
  await page.keyboard.press("Tab");
  await page.keyboard.press("Enter");
  await shows([ids.running]);

  await row(ids.running).getByRole("link", { name: acct.beta }).click();
  await see(page.locator("main h1"), "beta-batches");
  expect(new URL(page.url()).hash).toBe(`#/accounts/${acct.beta}`);
}, 60_000);

test("phone width (390 px): the Batches page fits without sideways scrolling; no foreign request, no console error", async () => {
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const pw = watch(phone, t.s.url);
  const p = await phone.newPage();
  await p.goto(t.s.url + "/console");
  await p.getByLabel("Admin token or API key").fill(ADMIN_TOKEN);
  await p.getByRole("button", { name: "Sign in" }).click();
  await p.getByRole("heading", { name: "Overview" }).waitFor();
  await p.goto(`${t.s.url}/console#/batches`);
  await p.getByRole("region", { name: "Batches" }).locator(`tr[data-batch="${ids.done}"]`).waitFor();
  const wide = await p.evaluate(() => [...document.querySelectorAll("body *")].filter((e: any) => e.getBoundingClientRect().right > 391 && !e.parentElement?.closest("nav, .table-wrap")).slice(0, 6).map((e: any) => e.tagName + "." + e.className));
  expect({ width: await p.evaluate(() => document.documentElement.scrollWidth), wide }).toEqual({ width: 390, wide: [] });
  await shot(p, "batches-390");
  await phone.close();
  expect([...pw.foreign, ...w.foreign]).toEqual([]);
  expect([...pw.errors, ...w.errors]).toEqual([]);
}, 60_000);
