/**
 * Debian's chromium driven by playwright-core (its own browser downloads do not work here), plus
 * what every console test checks: no request leaves the server's origin, no console errors.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const SHOTS = join(import.meta.dir, "..", "..", "test-output", "console");

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-dev-shm-usage"],
  });
}

export interface Watched {
  /** requests to anything but the server's origin (blob: and data: URLs are local) */
  foreign: string[];
  /** console errors and uncaught exceptions, with the step they happened in */
  errors: string[];
  step(name: string): void;
}

/** Record what the page does; `allow` lists console errors expected in a named step. */
export function watch(context: BrowserContext, origin: string, allow: Record<string, RegExp> = {}): Watched {
  let current = "start";
  const w: Watched = { foreign: [], errors: [], step: (n) => void (current = n) };
  context.on("request", (r) => {
    const url = r.url();
    if (!url.startsWith(origin + "/") && !url.startsWith("blob:") && !url.startsWith("data:")) w.foreign.push(url);
  });
  const onPage = (page: Page) => {
    page.on("console", (m) => {
      if (m.type() !== "error") return;
      if (allow[current]?.test(m.text())) return;
      w.errors.push(`[${current}] ${m.text()}`);
    });
    page.on("pageerror", (e) => w.errors.push(`[${current}] uncaught: ${e.message}`));
  };
  context.on("page", onPage);
  for (const p of context.pages()) onPage(p);
  return w;
}

export async function shot(page: Page, name: string) {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/**
 * Wait until the locator's text contains `want` (or matches it, or equals it with `exact`), like
 * Playwright's web-first assertions (which live in @playwright/test, not playwright-core).
 */
export async function see(locator: import("playwright-core").Locator, want: string | RegExp, opts: { timeout?: number; exact?: boolean } = {}) {
  const end = Date.now() + (opts.timeout ?? 15_000);
  let last = "";
  for (;;) {
    last = (await locator.first().innerText({ timeout: Math.max(1, end - Date.now()) }).catch(() => last)) ?? "";
    const ok = typeof want === "string" ? (opts.exact ? last.trim() === want : last.includes(want)) : want.test(last);
    if (ok) return last;
    if (Date.now() > end) throw new Error(`expected text ${opts.exact ? "=" : "containing"} ${String(want)}, got: ${JSON.stringify(last.slice(0, 400))}`);
    await Bun.sleep(50);
  }
}

export async function lacks(locator: import("playwright-core").Locator, unwanted: string) {
  const text = await locator.first().innerText();
  if (text.includes(unwanted)) throw new Error(`did not expect ${JSON.stringify(unwanted)} in ${JSON.stringify(text.slice(0, 400))}`);
}
