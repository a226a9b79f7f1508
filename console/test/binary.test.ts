/**
 * The compiled dist/reelay, copied alone into an empty directory, serves the console offline: the
 * page, script and stylesheet come from the binary (gzip, strict CSP), chromium signs in as the
 * operator and draws the overview, and no request goes anywhere but the binary's own port.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compiledBinary, freePort, waitForOk } from "../../test/support/harness.ts";
import { launchBrowser, see, shot, watch } from "./browser.ts";

const ADMIN = "console-binary-admin-token-01";
let proc: ReturnType<typeof Bun.spawn>;
let url: string;
let dir = "";

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "reelay-console-bin-"));
  const bin = join(dir, "reelay");
  copyFileSync(compiledBinary(), bin);
  Bun.spawnSync(["chmod", "+x", bin]);
  const port = freePort();
  url = `http://127.0.0.1:${port}`;
  proc = Bun.spawn([bin, "serve"], { cwd: dir, env: { PATH: "/usr/bin:/bin", HOME: dir, PORT: String(port), HOST: "127.0.0.1", REELAY_ADMIN_TOKEN: ADMIN, REELAY_LOG_FORMAT: "json", REELAY_LOG_LEVEL: "warn" }, stdout: "ignore", stderr: "ignore" });
  await waitForOk(url + "/healthz", 90_000);
}, 300_000);

afterAll(async () => {
  proc?.kill("SIGTERM");
  await proc?.exited;
  rmSync(dir, { recursive: true, force: true }); // a 200 MB copy of the binary per run
});

test("page and assets come from the binary, compressed, under a same-origin-only CSP", async () => {
  const page = await fetch(url + "/console", { headers: { "accept-encoding": "gzip" } });
  expect(page.status).toBe(200);
  expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
  expect(page.headers.get("content-security-policy")).toContain("connect-src 'self'");
  const html = await page.text();
  expect(html).toContain('src="/console/assets/app.js"');
  expect(html).not.toMatch(/https?:\/\//);
  const js = await fetch(url + "/console/assets/app.js", { headers: { "accept-encoding": "gzip" } });
  expect(js.headers.get("content-encoding")).toBe("gzip");
  expect(js.headers.get("content-type")).toStartWith("text/javascript");
  const etag = js.headers.get("etag")!;
  expect((await fetch(url + "/console/assets/app.js", { headers: { "if-none-match": etag } })).status).toBe(304);
  expect((await fetch(url + "/console/assets/nope.js")).status).toBe(404);
});

test("chromium signs in as the operator and draws the overview, talking to nothing but the binary", async () => {
  const browser = await launchBrowser();
  try {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const w = watch(ctx, url);
    const page = await ctx.newPage();
    await page.goto(url + "/console");
    await page.getByLabel("Admin token or API key").fill(ADMIN);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    await page.waitForFunction(() => (globalThis as any).document.querySelectorAll(".uplot").length === 5);
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Models" }).click();
    await see(page.getByRole("region", { name: "Models" }), "preview-motion");
    await shot(page, "binary-models-1280");
    expect(w.foreign).toEqual([]);
    expect(w.errors).toEqual([]);
  } finally {
    await browser.close();
  }
}, 120_000);
