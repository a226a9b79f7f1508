/**
 * The console with the keyboard only (Tab, Shift+Tab, Enter, Space and typing; no mouse, no
 * element.click()): sign in as the operator, move between views, sign out, sign in with an API key
 * and run a streamed chat in the playground. Every element that takes focus on the way must show
 * it: an outline of at least 2 px, with 3:1 contrast against what surrounds it, not cut off by a
 * scrolling or clipping ancestor.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { startFakeOpenAI, type FakeOpenAI } from "../../test/fakes/openai-upstream.ts";
import { ADMIN_TOKEN, startTestServer, type TestServer } from "../../test/support/harness.ts";
import { buildConsole } from "../build.ts";
import { launchBrowser, see, shot, watch, type Watched } from "./browser.ts";

// page.evaluate callbacks run in the browser; the test's own type context has no DOM lib
declare const document: any;
declare const getComputedStyle: any;
declare const innerHeight: number;

let fake: FakeOpenAI;
let s: TestServer;
let browser: Browser;
let page: Page;
let w: Watched;
let apiKey = "";

beforeAll(async () => {
  await buildConsole();
  fake = await startFakeOpenAI();
  fake.behave({ tokens: 6, delayBetweenChunksMs: 50 });
  const dir = mkdtempSync(join(tmpdir(), "reelay-console-kb-"));
  writeFileSync(join(dir, "models.json"), JSON.stringify({
    builtins: false,
    models: [{ id: "chat-kb", plugin: "openai-compatible", options: { baseUrl: fake.url }, pricing: { inputPerMillion: 1_000_000, outputPerMillion: 2_000_000 }, maxOutputTokens: 64 }],
  }));
  s = await startTestServer({ REELAY_MODELS_FILE: join(dir, "models.json") });
  apiKey = (await s.newClient({ credits: 1_000_000 })).key;
  browser = await launchBrowser();
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  // the wrong token is answered 401, which chromium logs as a failed resource: expected there only
  w = watch(context, s.url, { "wrong token": /status of 401/ });
  page = await context.newPage();
  page.setDefaultTimeout(15_000);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await s?.close();
  await fake?.stop();
});

interface Focus {
  tag: string;
  name: string;
  ring: string | null;
  problem: string | null;
}

/** The focused element, and what (if anything) keeps a person from seeing that it has focus. */
function focused(p: Page): Promise<Focus | null> {
  return p.evaluate(() => {
    const e = document.activeElement;
    if (!e || e === document.body) return null;
    const name = (e.getAttribute("aria-label") || e.innerText || e.value || e.getAttribute("name") || "").trim().slice(0, 50);
    const cs = getComputedStyle(e);
    const width = parseFloat(cs.outlineWidth);
    const offset = parseFloat(cs.outlineOffset);
    const info = { tag: e.tagName.toLowerCase(), name, ring: null as string | null, problem: null as string | null };
    if (cs.outlineStyle === "none" || !(width >= 2)) return { ...info, problem: `no focus outline (outline: ${cs.outlineStyle} ${cs.outlineWidth})` };
    info.ring = `${cs.outlineWidth} ${cs.outlineColor} offset ${cs.outlineOffset}`;
    // contrast of the ring with what it is drawn on: the element itself (inset ring) or what is around it
    const rgb = (c: string) => (/rgba?\(([\d.]+), ([\d.]+), ([\d.]+)(?:, ([\d.]+))?\)/.exec(c) ?? []).slice(1).map((x) => (x === undefined ? 1 : Number(x)));
    let bgEl = offset + width <= 0 ? e : e.parentElement;
    while (bgEl && rgb(getComputedStyle(bgEl).backgroundColor)[3] === 0) bgEl = bgEl.parentElement;
    const bg = bgEl ? rgb(getComputedStyle(bgEl).backgroundColor) : [255, 255, 255];
    const lum = ([r, g, b]: number[]) => [r, g, b].map((v) => (v! / 255 <= 0.03928 ? v! / 255 / 12.92 : ((v! / 255 + 0.055) / 1.055) ** 2.4)).reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i]!, 0);
    const [l1, l2] = [lum(rgb(cs.outlineColor)), lum(bg)];
    const contrast = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
    if (contrast < 3) return { ...info, problem: `focus outline contrast ${contrast.toFixed(2)}:1 against ${getComputedStyle(bgEl ?? document.body).backgroundColor}` };
    // the ring must not be cut off by an ancestor that clips (overflow other than visible)
    const r = e.getBoundingClientRect();
    const reach = Math.max(0, offset + width);
    for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
      const s = getComputedStyle(a);
      if (s.overflowX === "visible" && s.overflowY === "visible") continue;
      const b = a.getBoundingClientRect();
      const left = b.left + parseFloat(s.borderLeftWidth);
      const top = b.top + parseFloat(s.borderTopWidth);
      if (r.left - reach < left - 0.5 || r.top - reach < top - 0.5 || r.right + reach > left + a.clientWidth + 0.5 || r.bottom + reach > top + a.clientHeight + 0.5) {
        return { ...info, problem: `focus outline cut off by ${a.tagName.toLowerCase()}.${a.className} (overflow ${s.overflowX}/${s.overflowY})` };
      }
    }
    if (r.bottom < 0 || r.top > innerHeight) return { ...info, problem: "focused element is outside the viewport" };
    return info;
  });
}

const visited: Focus[] = [];

/** Press `key` until the focused element matches, checking every stop on the way (at most `max` presses). */
async function pressUntil(key: "Tab" | "Shift+Tab", want: { tag?: string; name: string | RegExp }, max = 40): Promise<Focus> {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press(key);
    const f = await focused(page);
    if (!f) continue;
    visited.push(f);
    const nameOk = typeof want.name === "string" ? f.name === want.name : want.name.test(f.name);
    if (nameOk && (!want.tag || f.tag === want.tag)) return f;
  }
  throw new Error(`${key} × ${max} never reached ${want.tag ?? ""} ${String(want.name)}; stops: ${visited.slice(-max).map((f) => `${f.tag} "${f.name}"`).join(", ")}`);
}

/** Wait until the sign-in form's token field has focus (the state the next keystrokes depend on). */
const tokenFieldFocused = () => page.waitForFunction(() => document.activeElement?.getAttribute("name") === "token", undefined, { timeout: 5_000 });

const heading = (name: string) => page.getByRole("heading", { level: 1, name }).waitFor();

test("operator: sign in, move between views and sign out with the keyboard only", async () => {
  await page.goto(s.url + "/console");
  await page.getByLabel("Admin token or API key").waitFor();
  await tokenFieldFocused(); // the token field takes focus at once
  expect(await focused(page)).toMatchObject({ tag: "input", problem: null });
  w.step("wrong token");
  await page.keyboard.type("wrong-token-000");
  await page.keyboard.press("Enter");
  await see(page.getByRole("alert"), "Wrong admin token.");
  w.step("operator");
  // still in the field: select it all and type the right token, then Tab to the button and press Space
  await page.keyboard.press("ControlOrMeta+A");
  await page.keyboard.type(ADMIN_TOKEN);
  await pressUntil("Tab", { tag: "button", name: "Sign in" }, 3);
  await page.keyboard.press("Space");
  await heading("Overview");

  await pressUntil("Tab", { tag: "a", name: "Accounts" });
  await page.keyboard.press("Enter");
  await heading("Accounts");
  // into the page: search for an account, then create one, all from the keyboard
  await pressUntil("Tab", { tag: "input", name: "Search accounts by name or id" });
  await page.keyboard.type("nobody");
  await page.keyboard.press("Enter");
  await see(page.locator(".empty"), "No account matches “nobody”.");
  await pressUntil("Tab", { tag: "input", name: "account-name" });
  await page.keyboard.type("made-by-keyboard");
  await pressUntil("Tab", { tag: "button", name: "Create account" });
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { level: 1, name: /made-by-keyboard/ }).waitFor();
  const list = (await (await s.admin("/admin/accounts?search=made-by-keyboard")).json()) as any;
  expect(list.data.map((a: any) => a.name)).toEqual(["made-by-keyboard"]);

  // back up to the navigation with Shift+Tab; the time range of the overview with Space
  await pressUntil("Shift+Tab", { tag: "a", name: "Overview" }, 60);
  await page.keyboard.press("Enter");
  await heading("Overview");
  await pressUntil("Tab", { tag: "button", name: "7 days" });
  await page.keyboard.press("Space");
  await see(page.locator(".stat").first(), "7 days");
  expect(await page.getByRole("radio", { name: "7 days" }).getAttribute("aria-checked")).toBe("true");
  await pressUntil("Shift+Tab", { tag: "a", name: "Models" });
  await page.keyboard.press("Enter");
  await heading("Models");
  await see(page.getByRole("region", { name: "Models" }), "chat-kb");
  await shot(page, "keyboard-models-1280");

  await pressUntil("Tab", { tag: "button", name: "Sign out" });
  await page.keyboard.press("Enter");
  await page.getByLabel("Admin token or API key").waitFor();
  await tokenFieldFocused(); // focus lands on the token field again, without a Tab
  expect(await focused(page)).toMatchObject({ tag: "input", problem: null });
}, 60_000);

test("client: sign in with a key and stream a chat in the playground with the keyboard only", async () => {
  w.step("client");
  await page.keyboard.type(apiKey);
  await page.keyboard.press("Enter");
  await heading("Usage and credits");
  await pressUntil("Tab", { tag: "a", name: "Playground" });
  await page.keyboard.press("Enter");
  await heading("Playground");
  // switch tabs with Space and back with Shift+Tab and Enter
  await pressUntil("Tab", { tag: "button", name: "Embeddings" });
  await page.keyboard.press("Space");
  await page.getByLabel("Inputs, one per line").waitFor();
  await pressUntil("Shift+Tab", { tag: "button", name: "Chat" });
  await page.keyboard.press("Enter");
  await pressUntil("Tab", { tag: "select", name: /chat-kb/ });
  await pressUntil("Tab", { tag: "textarea", name: "Message" });
  await page.keyboard.type("Hello from the keyboard");
  await page.keyboard.press("Enter");
  const answer = page.getByTestId("assistant-message").locator("p");
  await see(answer, "one two three four five six", { exact: true });
  await see(page.getByTestId("cost"), "6 output tokens");
  // the conversation can be scrolled from the keyboard: it is a focusable log
  await pressUntil("Shift+Tab", { name: "Conversation" }, 3);
  expect(await page.getByRole("log", { name: "Conversation" }).count()).toBe(1);
  await pressUntil("Tab", { tag: "textarea", name: "Message" }, 3);
  // and a second message from there, sent with the Send button
  await page.keyboard.type("Again");
  await pressUntil("Tab", { tag: "button", name: "Send" }, 2);
  await page.keyboard.press("Enter");
  await see(page.getByTestId("assistant-message").nth(1).locator("p"), "one two three four five six", { exact: true });
  // the page shows the text before the stream has ended on the server (which settles it then): the
  // charge is in /v1/usage within a second of the response's end, so ask for a few seconds
  let chats: unknown[] = [];
  for (const end = Date.now() + 5_000; Date.now() < end; await Bun.sleep(100)) {
    const usage = (await (await fetch(`${s.url}/v1/usage?limit=10`, { headers: { authorization: `Bearer ${apiKey}` } })).json()) as any;
    chats = usage.data.filter((u: any) => u.kind === "chat" && u.completion_tokens === 6);
    if (chats.length === 2) break;
  }
  expect(chats).toHaveLength(2);
  await shot(page, "keyboard-playground-1280");
}, 60_000);

test("every element that took focus showed it", () => {
  expect(visited.length).toBeGreaterThan(20);
  expect(visited.filter((f) => f.problem).map((f) => `${f.tag} "${f.name}": ${f.problem}`)).toEqual([]);
  expect(w.foreign).toEqual([]);
  expect(w.errors).toEqual([]);
});
