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

/**
 * What a chart actually drew: for each series in its legend, how many canvas pixels have that
 * series' colour (its legend marker's). A chart element that exists but draws nothing (a lone
 * value on a line, a series hidden under another) counts 0.
 */
// runs in the browser; this file's type context has no DOM lib
declare const getComputedStyle: (e: unknown) => { borderLeftWidth: string; borderLeftColor: string; backgroundColor: string; lineHeight: string };

export async function chartInk(page: Page, title: string): Promise<Record<string, number>> {
  const figure = page.locator("figure.chart").filter({ has: page.locator("figcaption", { hasText: title }) }).first();
  await figure.locator("canvas").waitFor();
  return figure.evaluate((fig: any) => {
    const canvas = fig.querySelector("canvas");
    const px: Uint8ClampedArray = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
    const rgb = (css: string) => (/rgba?\((\d+), (\d+), (\d+)(?:, ([\d.]+))?\)/.exec(css) ?? []).slice(1).map(Number);
    const out: Record<string, number> = {};
    for (const row of [...fig.querySelectorAll(".u-legend .u-series")].slice(1)) {
      const marker = getComputedStyle(row.querySelector(".u-marker"));
      const [r, g, b, a] = rgb(marker.borderLeftWidth !== "0px" && !marker.borderLeftColor.startsWith("rgba(0, 0, 0, 0") ? marker.borderLeftColor : marker.backgroundColor);
      if (r === undefined || a === 0) throw new Error("no colour for series " + row.textContent);
      let n = 0;
      for (let i = 0; i < px.length; i += 4) if (Math.abs(px[i]! - r) <= 2 && Math.abs(px[i + 1]! - g!) <= 2 && Math.abs(px[i + 2]! - b!) <= 2 && px[i + 3]! > 250) n++;
      out[row.querySelector(".u-label").textContent] = n;
    }
    return out;
  });
}

/**
 * Where a chart's y-axis labels begin, in canvas pixels from its left edge: a label cut by too
 * narrow an axis starts at 0 (its first characters fall outside the canvas).
 */
export async function yLabelsLeft(page: Page, title: string): Promise<number> {
  const figure = page.locator("figure.chart").filter({ has: page.locator("figcaption", { hasText: title }) }).first();
  await figure.locator("canvas").waitFor();
  return figure.evaluate((fig: any) => {
    const canvas = fig.querySelector("canvas");
    const { width, height } = canvas;
    const px: Uint8ClampedArray = canvas.getContext("2d").getImageData(0, 0, width, height).data;
    for (let x = 0; x < width; x++) for (let y = 0; y < height; y++) if (px[(y * width + x) * 4 + 3]! > 0) return x;
    return width;
  });
}

/** The stat cards whose value does not fit on one line (by its height against its line height). */
export async function wrappedStats(page: Page): Promise<string[]> {
  return page.locator(".stat").evaluateAll((cards: any[]) =>
    cards.filter((c) => {
      const v = c.querySelector(".stat-value");
      const line = parseFloat(getComputedStyle(v).lineHeight as any) || 20;
      return v.getBoundingClientRect().height > line * 1.5;
    }).map((c) => c.querySelector(".stat-label").textContent),
  );
}
