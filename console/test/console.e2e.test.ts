/**
 * The console end to end in a real browser (Debian chromium) against reelay on the real Postgres,
 * with the fake OpenAI upstream for chat, the local embeddings model and the local preview video
 * renderer: operator creates an account, grants $5, creates a key and copies it; the client signs in
 * with it, streams a chat, embeds, renders a video from an uploaded PNG and plays it; the operator
 * sees the usage and the charges. Screenshots of every page at 1280×800 and 390×844 go to
 * test-output/console/. No request may leave the server's origin; no console error may appear.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { startFakeOpenAI, type FakeOpenAI } from "../../test/fakes/openai-upstream.ts";
import { ADMIN_TOKEN, startTestServer, type TestServer } from "../../test/support/harness.ts";
import { pngBase64 } from "../../test/videos/support.ts";
import { buildConsole } from "../build.ts";
import { chartInk, lacks, launchBrowser, see, shot, watch, wrappedStats, yLabelsLeft, type Watched } from "./browser.ts";

const CHAT_PRICING = { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000 };
const REPLY = " one two three four five six seven eight";
// page.evaluate callbacks run in the browser; the test's own type context has no DOM lib
declare const document: any;
declare const navigator: any;

let fake: FakeOpenAI;
let s: TestServer;
let browser: Browser;
let desktop: BrowserContext;
let page: Page;
let w: Watched;

beforeAll(async () => {
  await buildConsole();
  fake = await startFakeOpenAI();
  // one word every 150 ms: the test sees the answer grow while it streams
  fake.behave({ tokens: 8, delayBetweenChunksMs: 150 });
  const dir = mkdtempSync(join(tmpdir(), "reelay-console-"));
  writeFileSync(join(dir, "models.json"), JSON.stringify({
    models: [
      { id: "chat-e2e", plugin: "openai-compatible", options: { baseUrl: fake.url }, pricing: CHAT_PRICING, maxOutputTokens: 64 },
      { id: "use-lite", plugin: "local-embeddings", pricing: { inputPerMillion: 20_000 } },
      { id: "preview-motion", plugin: "preview-video", pricing: { perSecond: 30_000 } },
    ],
  }));
  s = await startTestServer({ REELAY_MODELS_FILE: join(dir, "models.json") });
  browser = await launchBrowser();
  desktop = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await desktop.grantPermissions(["clipboard-read", "clipboard-write"], { origin: s.url });
  // a wrong credential is answered 401, which chromium logs as a failed resource: expected there only
  const refused = /status of 401/;
  w = watch(desktop, s.url, { "wrong admin token": refused, "wrong api key": refused });
  page = await desktop.newPage();
  page.setDefaultTimeout(15_000);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await s?.close();
  await fake?.stop();
});

const nav = (name: string) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name, exact: true }).click();

async function signIn(p: Page, token: string) {
  await p.getByLabel("Admin token or API key").fill(token);
  await p.getByRole("button", { name: "Sign in" }).click();
}

let accountId = "";
let apiKey = "";
let chatCost = "";

test("operator: wrong token is refused, then sign in, create an account, grant $5, create and copy a key", async () => {
  w.step("wrong admin token");
  await page.goto(s.url + "/console");
  await page.getByLabel("Admin token or API key").waitFor();
  await shot(page, "sign-in-1280");
  await signIn(page, "not-the-admin-token-123");
  await see(page.getByRole("alert"), "Wrong admin token.");

  w.step("operator sign-in");
  await signIn(page, ADMIN_TOKEN);
  await page.getByRole("heading", { name: "Overview" }).waitFor();
  // nothing has happened yet: empty charts keep their y-axis labels whole, every card's figure fits on a line
  await page.locator(".uplot").nth(4).waitFor();
  for (const title of ["Requests", "Tokens", "Credits charged", "Error rate", "Latency"]) expect({ title, left: (await yLabelsLeft(page, title)) > 0 }).toEqual({ title, left: true });
  await see(page.locator(".stat").filter({ hasText: "Video queue" }), "queued");
  expect(await wrappedStats(page)).toEqual([]);
  expect(await page.evaluate(() => Object.keys(sessionStorage))).toEqual(["reelay.console.session"]);
  expect(await page.evaluate(() => localStorage.length)).toBe(0);
  expect(page.url()).not.toContain(ADMIN_TOKEN);

  w.step("create account");
  await nav("Accounts");
  await page.getByLabel("Name", { exact: true }).fill("e2e-acme");
  await page.getByRole("button", { name: "Create account" }).click();
  await page.getByRole("heading", { name: /e2e-acme/ }).waitFor();
  accountId = /#\/accounts\/(acct_\w+)/.exec(page.url())![1]!;

  w.step("grant");
  const grant = page.getByRole("region").or(page.locator("section")).filter({ has: page.getByRole("heading", { name: "Grant credits" }) });
  await grant.getByLabel("Amount (USD)").fill("5");
  await grant.getByText("$5.00 = 5,000,000 micro-dollars").waitFor();
  await grant.getByLabel("Reason").fill("welcome credit");
  await grant.getByRole("button", { name: "Grant credits" }).click();
  await see(grant.getByRole("status"), "Granted $5.00.");
  const balance = page.locator(".stat").filter({ hasText: "Balance" });
  await see(balance, "$5.00");
  const acct = (await (await s.admin(`/admin/accounts/${accountId}`)).json()) as any;
  expect(acct.balance).toBe(5_000_000);

  w.step("create key");
  const newKey = page.locator("section").filter({ has: page.getByRole("heading", { name: "New key" }) });
  await newKey.getByLabel("Key name").fill("playground");
  await newKey.getByRole("button", { name: "Create key" }).click();
  apiKey = (await page.getByTestId("new-key").textContent())!;
  expect(apiKey).toStartWith("rl-");
  await page.getByRole("button", { name: "Copy key" }).click();
  await page.getByRole("button", { name: "Copied" }).waitFor();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(apiKey);
  await shot(page, "account-new-key-1280");
  await page.getByRole("button", { name: "Done" }).click();
  await see(page.locator("section").filter({ has: page.getByRole("heading", { name: "Keys" }) }), apiKey.slice(0, 11));
}, 60_000);

test("client: wrong key is refused; sign in with the copied key; streamed chat with its cost", async () => {
  w.step("sign out");
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByLabel("Admin token or API key").waitFor();
  expect(await page.evaluate(() => sessionStorage.length)).toBe(0);

  w.step("wrong api key");
  await signIn(page, "rl-" + "x".repeat(40));
  await see(page.getByRole("alert"), "That API key is not valid");

  w.step("client sign-in");
  await signIn(page, apiKey);
  await page.getByRole("heading", { name: "Usage and credits" }).waitFor();
  await see(page.locator(".stat").filter({ hasText: "Available" }), "$5.00");

  w.step("chat");
  await nav("Playground");
  // the first chat model is chosen for us (chat-e2e, which says nothing of itself: the generic hint);
  // the built-in one says what it is for: it writes children's stories, it does not answer
  await see(page.getByTestId("chat-hint"), "Ask something.");
  await page.getByLabel("Model").selectOption("stories260k");
  await see(page.getByTestId("chat-hint"), "writes short children's stories");
  await page.getByLabel("Model").selectOption("chat-e2e");
  await see(page.getByTestId("chat-hint"), "Ask something.");
  await page.getByLabel("Message").fill("Hello there");
  await page.getByLabel("Message").press("Enter");
  const answer = page.getByTestId("assistant-message").locator("p");
  // tokens appear as they arrive: a partial answer is on screen before the whole one
  await see(answer, "one two", { timeout: 10_000 });
  expect((await answer.textContent())!.trim()).not.toBe(REPLY.trim());
  await see(answer, REPLY.trim(), { timeout: 10_000, exact: true });
  const cost = page.getByTestId("cost");
  await see(cost, "Cost $", { timeout: 15_000 });
  const usage = (await (await fetch(`${s.url}/v1/usage?limit=5`, { headers: { authorization: `Bearer ${apiKey}` } })).json()) as any;
  const row = usage.data.find((u: any) => u.kind === "chat");
  expect(row.completion_tokens).toBe(8);
  expect(row.cost).toBe(row.prompt_tokens * 3 + 8 * 15);
  chatCost = `$${(row.cost / 1e6).toFixed(6).replace(/0+$/, "")}`;
  await see(cost, `Cost ${chatCost}`);
  await see(cost, "8 output tokens");
  await shot(page, "playground-chat-1280");
}, 60_000);

test("client: embeddings similarity matrix", async () => {
  w.step("embeddings");
  await page.getByRole("radio", { name: "Embeddings" }).click();
  await page.getByLabel("Model").selectOption("use-lite");
  await page.getByRole("button", { name: "Embed" }).click();
  const matrix = page.getByRole("region", { name: "Similarity matrix" });
  await matrix.waitFor({ timeout: 30_000 });
  const cells = await matrix.locator("tbody tr").first().locator("td").allTextContents();
  expect(cells).toHaveLength(3);
  expect(Number(cells[0])).toBeCloseTo(1, 2);
  // "How old are you?" is closer to "What is your age?" than to the weather
  expect(Number(cells[1])).toBeGreaterThan(Number(cells[2]));
  await see(page.getByTestId("cost"), "input tokens", { timeout: 15_000 });
  await shot(page, "playground-embeddings-1280");
}, 60_000);

test("client: image-to-video from an uploaded PNG completes and plays", async () => {
  w.step("video");
  await page.getByRole("radio", { name: "Image to video" }).click();
  await page.getByLabel("Model").selectOption("preview-motion");
  await page.getByLabel("Image (PNG, JPEG or WebP)").setInputFiles({ name: "lighthouse.png", mimeType: "image/png", buffer: Buffer.from(pngBase64(96, 64), "base64") });
  await page.getByRole("img", { name: "Selected image lighthouse.png" }).waitFor();
  // the photo is landscape (96×64): so is the video, by default
  await page.waitForFunction(() => (document.querySelector("select[name=video-size]") as any)?.value === "832x480");
  await page.getByLabel("Seconds").fill("1");
  await page.getByRole("button", { name: "Generate video" }).click();
  await see(page.getByTestId("job-status"), /queued|processing|completed/);
  const video = page.getByLabel("Generated video");
  await video.waitFor({ timeout: 60_000 });
  const duration = await video.evaluate((v: any) => new Promise<number>((resolve, reject) => {
    if (v.readyState >= 1) return resolve(v.duration);
    v.addEventListener("loadedmetadata", () => resolve(v.duration), { once: true });
    v.addEventListener("error", () => reject(new Error("video error " + v.error?.code)), { once: true });
  }));
  expect(duration).toBeGreaterThan(0.5);
  expect(await video.evaluate((v: any) => [v.videoWidth, v.videoHeight])).toEqual([832, 480]);
  await see(page.getByTestId("job-status"), "completed");
  await see(page.getByTestId("cost"), "Cost $0.03", { timeout: 15_000 });
  await shot(page, "playground-video-1280");

  w.step("client jobs");
  await nav("Video jobs");
  const card = page.getByRole("article").first();
  await see(card, "completed");
  await card.getByRole("button", { name: "Play video" }).click();
  await card.locator("video").waitFor();
  await shot(page, "client-jobs-1280");
  await nav("Usage");
  await see(page.getByRole("region", { name: "Usage records" }), "preview-motion");
  await page.locator(".uplot").first().waitFor();
  await shot(page, "client-usage-1280");
}, 120_000);

test("operator: the request is in usage, the charges are in the ledger; every page renders", async () => {
  w.step("operator again");
  await page.getByRole("button", { name: "Sign out" }).click();
  await signIn(page, ADMIN_TOKEN);
  // billing writes usage rows in batches: the overview counts what has landed (it reloads every 30 s)
  for (let i = 0; ; i++) {
    const ts = (await (await s.admin(`/admin/usage/timeseries?bucket=15m&from=${new Date(Date.now() - 86_400_000).toISOString()}`)).json()) as any;
    if (ts.total.requests.reduce((a: number, b: number) => a + b, 0) === 3) break;
    if (i > 100) throw new Error("3 requests never showed in the usage time series");
    await Bun.sleep(100);
  }
  await page.getByRole("heading", { name: "Overview" }).waitFor();
  await page.reload();
  await see(page.locator(".stat").filter({ hasText: "Requests" }), /^Requests\n3\n/);
  // the charts are drawn in an effect after the numbers render: wait for them (flaked under load)
  await page.locator(".uplot").nth(4).waitFor();
  expect(await page.locator(".uplot").count()).toBe(5);
  // all three requests sit in the current bucket: each model's share is drawn (stacked, not hidden
  // under another model's line), and the lone latency and error-rate values are drawn as dots
  for (const title of ["Requests per 15m", "Credits charged per 15m"]) {
    const ink = await chartInk(page, title);
    expect({ title, models: Object.keys(ink).sort() }).toEqual({ title, models: ["chat-e2e", "preview-motion", "use-lite"] });
    if (title.startsWith("Requests")) for (const [m, n] of Object.entries(ink)) expect({ m, drawn: n > 20 }).toEqual({ m, drawn: true });
    else expect(ink["preview-motion"]).toBeGreaterThan(20); // $0.03 dwarfs the chat's and embedding's fractions of a cent
  }
  const latency = await chartInk(page, "Latency");
  expect({ latency, p50: latency.p50! > 20, p99: latency.p99! > 20 }).toEqual({ latency, p50: true, p99: true });
  expect((await chartInk(page, "Error rate"))["error rate"]).toBeGreaterThan(20);
  await shot(page, "overview-1280");

  await page.goto(`${s.url}/console#/accounts/${accountId}`);
  const usage = page.getByRole("region", { name: "Usage per model" });
  await see(usage, "chat-e2e");
  await see(usage, "preview-motion");
  const ledger = page.getByRole("region", { name: "Ledger" });
  await see(ledger, "charge");
  await see(ledger, `−${chatCost}`);
  await see(ledger, "−$0.03");
  await see(ledger, "welcome credit");
  // holds and leases (amount 0) are hidden until asked for: the API has them, the table shows money rows only
  const all = (await (await fetch(`${s.url}/admin/accounts/${accountId}/ledger?limit=100`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as any;
  const kinds = (rows: any[]) => [...new Set(rows.map((r) => r.kind))].sort();
  expect(kinds(all.data)).toEqual(expect.arrayContaining(["charge", "grant", "hold"]));
  const shown = await ledger.locator("tbody tr td:nth-child(2)").allTextContents();
  expect([...new Set(shown)].sort()).toEqual(kinds(all.data.filter((r: any) => !["hold", "release", "lease", "lease_return"].includes(r.kind))));
  await page.getByLabel(/Show holds and leases/).check();
  await see(ledger, "hold");
  expect((await ledger.locator("tbody tr").count())).toBe(Math.min(20, all.data.length));
  await page.getByLabel(/Show holds and leases/).uncheck();
  await page.locator(".uplot").nth(4).waitFor();
  await shot(page, "account-1280");

  await nav("Keys");
  await see(page.getByRole("region", { name: "API keys" }), apiKey.slice(0, 11));
  await lacks(page.getByRole("region", { name: "API keys" }), "never");
  await shot(page, "keys-1280");
  await nav("Video jobs");
  await see(page.getByRole("article").first(), "completed");
  await page.getByRole("article").first().getByRole("button", { name: "Play video" }).click();
  await page.getByRole("article").first().locator("video").waitFor();
  await shot(page, "videos-1280");
  await nav("Models");
  const models = page.getByRole("region", { name: "Models" });
  await see(models, "chat-e2e");
  await see(models, "$3.00 / 1M input tokens");
  await see(models, "healthy");
  // its upstream deployment as this instance routes it (GET /admin/upstreams)
  const deployment = models.getByRole("list", { name: "Deployments" }).getByRole("listitem").first();
  await see(deployment, `127.0.0.1:${new URL(fake.url).port}`);
  await see(deployment, "circuit closed");
  await see(deployment, "in flight");
  await shot(page, "models-1280");
  await nav("Accounts");
  await page.getByRole("region", { name: "Accounts" }).waitFor();
  await shot(page, "accounts-1280");
}, 60_000);

test("phone width (390 px): every page fits without sideways scrolling", async () => {
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const pw = watch(phone, s.url);
  const p = await phone.newPage();
  const fits = async (name: string) => {
    await p.waitForLoadState("networkidle");
    await p.locator(".loading").first().waitFor({ state: "detached", timeout: 15_000 }).catch(() => {});
    const wide = await p.evaluate(() => [...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > 391 && !e.parentElement?.closest("nav, .table-wrap")).slice(0, 6).map((e) => e.tagName + "." + e.className + " " + Math.round(e.getBoundingClientRect().right)));
    expect({ name, width: await p.evaluate(() => document.documentElement.scrollWidth), wide }).toEqual({ name, width: 390, wide: [] });
    await shot(p, `${name}-390`);
  };
  await p.goto(s.url + "/console");
  await fits("sign-in");
  await signIn(p, ADMIN_TOKEN);
  await p.getByRole("heading", { name: "Overview" }).waitFor();
  for (const [hash, name] of [["overview", "overview"], ["accounts", "accounts"], [`accounts/${accountId}`, "account"], ["keys", "keys"], ["videos", "videos"], ["models", "models"]]) {
    await p.goto(`${s.url}/console#/${hash}`);
    await p.locator("main h1").first().waitFor();
    await fits(name!);
  }
  await p.getByRole("button", { name: "Sign out" }).click();
  await signIn(p, apiKey);
  // signed in once the client's page shows; before that, the sign-in page's own h1 satisfies the
  // loop's wait, and the late sign-in then moved the page to #/home mid-loop (seen under load)
  await p.getByRole("heading", { name: "Usage and credits" }).waitFor();
  for (const [hash, name] of [["home", "client-usage"], ["jobs", "client-jobs"], ["batches", "client-batches"], ["playground/chat", "playground-chat"], ["playground/embeddings", "playground-embeddings"], ["playground/video", "playground-video"]]) {
    await p.goto(`${s.url}/console#/${hash}`);
    await p.locator("main h1").first().waitFor();
    if (name === "playground-embeddings") {
      try {
        await p.getByRole("button", { name: "Embed" }).click();
        await p.getByRole("region", { name: "Similarity matrix" }).waitFor({ timeout: 30_000 });
      } catch (e) {
        await shot(p, "FAILED-playground-embeddings-390");
        throw e;
      }
    }
    await fits(name!);
  }
  await phone.close();
  expect(pw.foreign).toEqual([]);
  expect(pw.errors).toEqual([]);
}, 90_000);

test("client: the Batches page shows a batch's progress while it runs, then its counts and files", async () => {
  w.step("client batches");
  await page.getByRole("button", { name: "Sign out" }).click();
  await signIn(page, apiKey);
  await page.getByRole("heading", { name: "Usage and credits" }).waitFor();
  // each line's upstream answer takes 6 s: the batch is seen running, then done
  fake.behave({ tokens: 4, delayHeadersMs: 6_000 });
  const auth = { authorization: `Bearer ${apiKey}` };
  const lines = [0, 1, 2].map((i) => JSON.stringify({ custom_id: `q${i}`, method: "POST", url: "/v1/chat/completions", body: { model: "chat-e2e", messages: [{ role: "user", content: `question ${i}` }], max_tokens: 4 } }));
  const form = new FormData();
  form.set("purpose", "batch");
  form.set("file", new Blob([lines.join("\n") + "\n"]), "questions.jsonl");
  const file = (await (await fetch(s.url + "/v1/files", { method: "POST", headers: auth, body: form })).json()) as any;
  const created = (await (await fetch(s.url + "/v1/batches", { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h", metadata: { job: "e2e" } }) })).json()) as any;
  try {
    await nav("Batches");
    await page.getByRole("heading", { name: "Batches" }).waitFor();
    const card = page.getByRole("article", { name: `Batch ${created.id}` });
    // the page refreshes by itself while the batch runs
    await see(card, "in progress");
    await see(card.getByTestId("batch-counts"), "0 / 3 done");
    await see(card, "/v1/chat/completions");
    await see(card, "job=e2e");
    await card.getByRole("progressbar", { name: "progress" }).waitFor();
    await shot(page, "client-batches-running-1280");
    await see(card, "completed", { timeout: 30_000 });
    await see(card.getByTestId("batch-counts"), "3 / 3 done · 3 ok · 0 failed");
    await card.getByRole("button", { name: "Download output" }).waitFor();
    await lacks(card, "Cancel batch");
    const api = (await (await fetch(`${s.url}/v1/batches/${created.id}`, { headers: auth })).json()) as any;
    expect(api.request_counts).toEqual({ total: 3, completed: 3, failed: 0 });
    const download = page.waitForEvent("download");
    await card.getByRole("button", { name: "Download output" }).click();
    const saved = await download;
    expect(saved.suggestedFilename()).toBe(`${created.id}_output.jsonl`);
    await shot(page, "client-batches-1280");
  } finally {
    fake.behave({ tokens: 8, delayBetweenChunksMs: 150 });
  }
}, 90_000);

test("nothing left the server's origin and the console logged no errors", () => {
  expect(w.foreign).toEqual([]);
  expect(w.errors).toEqual([]);
});
