/**
 * A real browser (Debian's chromium through playwright-core) plays a preview job's MP4 straight
 * from GET …/content in a `<video>` element and seeks in it: its media requests are byte ranges,
 * answered 206, and the decoded video has the job's length and size.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { launchBrowser } from "../../console/test/browser.ts";
import { startTestServer, type TestServer } from "../support/harness.ts";
import { client, pngBase64, scriptedEnv } from "./support.ts";

// page.evaluate callbacks run in the browser; the test's own type context has no DOM lib
declare const document: any;

let s: TestServer;
let browser: Browser;

beforeAll(async () => {
  s = await startTestServer({ ...scriptedEnv([], true), REELAY_SCHEDULER_POLL_MS: "50" });
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await s?.close();
});

test("chromium plays the MP4 from /content and seeks in it with range requests", async () => {
  const c = await s.newClient();
  const api = client(s.url, c.key);
  const id = ((await (await api.submit({ model: "preview-motion", prompt: "slow pan right", image: pngBase64(96, 64), seconds: 4, size: "480x832" })).json()) as any).id;
  const done = await api.waitFinal(id, 60_000);
  expect(done.status).toBe("completed");

  const context = await browser.newContext();
  // the key goes in the Authorization header, as a page's own fetches would send it; never in the URL
  await context.setExtraHTTPHeaders({ authorization: `Bearer ${c.key}` });
  const page = await context.newPage();
  const media: Array<{ status: number; range: string | null; contentRange: string | null }> = [];
  page.on("response", async (r) => {
    if (!r.url().endsWith(`/${id}/content`)) return;
    media.push({ status: r.status(), range: (await r.request().allHeaders())["range"] ?? null, contentRange: r.headers()["content-range"] ?? null });
  });
  // a page on reelay's own origin that holds nothing but the player
  await page.route(`${s.url}/player.html`, (route) => route.fulfill({ contentType: "text/html", body: `<!doctype html><video id="v" muted playsinline preload="auto" src="/v1/videos/generations/${id}/content"></video>` }));
  await page.goto(`${s.url}/player.html`);

  const played = await page.evaluate(async () => {
    const v = document.getElementById("v");
    const once = (name: string) => new Promise((resolve, reject) => {
      v.addEventListener(name, resolve, { once: true });
      v.addEventListener("error", () => reject(new Error(`media error ${v.error?.code}: ${v.error?.message}`)), { once: true });
    });
    if (v.readyState < 2) await once("loadeddata");
    await v.play();
    const start = performance.now();
    while (v.currentTime < 0.5 && performance.now() - start < 10_000) await new Promise((r) => setTimeout(r, 50));
    const playedTo = v.currentTime;
    v.pause();
    const seeked = once("seeked");
    v.currentTime = 3.25;
    await seeked;
    return { duration: v.duration, width: v.videoWidth, height: v.videoHeight, playedTo, seekedTo: v.currentTime, error: v.error ? v.error.code : null };
  });
  expect(played.error).toBeNull();
  expect(Math.abs(played.duration - 4)).toBeLessThan(0.2);
  expect([played.width, played.height]).toEqual([480, 832]);
  expect(played.playedTo).toBeGreaterThanOrEqual(0.5);
  expect(Math.abs(played.seekedTo - 3.25)).toBeLessThan(0.1);

  // chromium asks for ranges and gets them
  expect(media.length).toBeGreaterThan(0);
  expect(media.every((m) => m.status === 206 || m.status === 200)).toBe(true);
  const ranged = media.filter((m) => m.range !== null);
  expect(ranged.length).toBeGreaterThan(0);
  for (const m of ranged) {
    expect(m.status).toBe(206);
    expect(m.contentRange).toMatch(/^bytes \d+-\d+\/\d+$/);
  }
  await context.close();
}, 90_000);
