/**
 * Single sign-on for the console in Chromium against a real OpenID Connect server (the
 * `oidc-provider` package) started here: sign in through the IdP's own login and consent pages, the
 * role from the `groups` claim through REELAY_OIDC_ROLE_MAP, the session cookie's attributes, CSRF on
 * changes, refusal of a user with no mapped role, idle and absolute expiry, sign-out, and a forged
 * or replayed state refused, and a forged, replayed or missing nonce. Each sign-in and sign-out is in the audit log.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createServer, type Server } from "node:http";
import Provider from "oidc-provider";
import { sql } from "drizzle-orm";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { query } from "../../src/db/index.ts";
import { ADMIN_TOKEN, freePort, startTestServer, type TestServer } from "../../test/support/harness.ts";
import { buildConsole } from "../build.ts";
import { launchBrowser, see, shot } from "./browser.ts";

const USERS: Record<string, { name: string; groups: string[] }> = {
  ada: { name: "Ada Admin", groups: ["staff", "reelay-admins"] },
  bea: { name: "Bea Billing", groups: ["reelay-money"] },
  mal: { name: "Mal Nobody", groups: ["staff"] },
};

let s: TestServer;
let idp: Server;
let browser: Browser;

beforeAll(async () => {
  await buildConsole();
  const port = freePort();
  const issuer = `http://127.0.0.1:${port}`;
  s = await startTestServer({
    REELAY_OIDC_ISSUER: issuer,
    REELAY_OIDC_CLIENT_ID: "reelay-console",
    REELAY_OIDC_CLIENT_SECRET: "a-client-secret-for-the-test-0123456789",
    REELAY_OIDC_SCOPES: "openid profile groups",
    REELAY_OIDC_ROLE_CLAIM: "groups",
    REELAY_OIDC_ROLE_MAP: "reelay-admins=admin,reelay-money=billing",
  });
  const provider = new Provider(issuer, {
    clients: [{ client_id: "reelay-console", client_secret: "a-client-secret-for-the-test-0123456789", redirect_uris: [`${s.url}/sso/callback`], grant_types: ["authorization_code"], response_types: ["code"] }],
    claims: { openid: ["sub"], profile: ["name"], groups: ["groups"] },
    cookies: { keys: ["test-cookie-key-0123456789"] },
    pkce: { required: () => true },
    async findAccount(_ctx: unknown, id: string) {
      const u = USERS[id];
      return u ? { accountId: id, claims: async () => ({ sub: id, name: u.name, groups: u.groups }) } : undefined;
    },
  });
  idp = createServer(provider.callback());
  await new Promise<void>((resolve) => idp.listen(port, "127.0.0.1", resolve));
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  idp?.close();
  await s?.close();
});

async function signIn(login: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(s.url + "/console");
  await page.getByRole("link", { name: "Sign in with single sign-on" }).click();
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill("any");
  await page.getByRole("button", { name: "Sign-in" }).click();
  const cont = page.getByRole("button", { name: "Continue" });
  if (await cont.isVisible({ timeout: 5_000 }).catch(() => false)) await cont.click();
  return { context, page };
}

const cookieOf = async (context: BrowserContext) => (await context.cookies(s.url)).find((c) => c.name === "reelay_session");

test("sign in: the role from the groups claim, a locked-down cookie, CSRF on changes, sign-out", async () => {
  const { context, page } = await signIn("ada");
  await page.getByRole("heading", { name: "Overview" }).first().waitFor();
  await see(page.locator("body"), "Ada Admin (admin)");
  const cookie = (await cookieOf(context))!;
  expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Lax", secure: false, path: "/" });

  // the session works on the admin API like a token: reads, and changes with the CSRF token only
  const jar = { cookie: `reelay_session=${cookie.value}` };
  const me = (await (await fetch(`${s.url}/admin/me`, { headers: jar })).json()) as any;
  expect(me).toMatchObject({ type: "sso", id: "ada", name: "Ada Admin", role: "admin" });
  const noCsrf = await fetch(`${s.url}/admin/accounts`, { method: "POST", headers: { ...jar, "content-type": "application/json" }, body: JSON.stringify({ name: "x" }) });
  expect(noCsrf.status).toBe(403);
  expect(((await noCsrf.json()) as any).error.code).toBe("csrf_failed");
  const withCsrf = await fetch(`${s.url}/admin/accounts`, { method: "POST", headers: { ...jar, "content-type": "application/json", "x-csrf-token": me.csrf_token }, body: JSON.stringify({ name: "made-over-sso" }) });
  expect(withCsrf.status).toBe(201);

  // the console page itself makes changes with it
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Operators" }).click();
  await page.locator('input[name="operator-name"]').fill("Made By Ada");
  await page.getByRole("button", { name: "Create operator" }).click();
  await see(page.getByRole("region", { name: "Operators" }), "Made By Ada");
  await shot(page, "sso-operators");

  const log = (await (await s.admin("/admin/audit-log?actor=ada")).json()) as any;
  expect(log.data.map((e: any) => e.action)).toEqual(["operator.create", "account.create", "sso.sign_in"]);
  expect(log.data[2].actor).toEqual({ type: "sso", id: "ada", name: "Ada Admin" });

  // sign-out ends the session on the server, not only in the tab
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("link", { name: "Sign in with single sign-on" }).waitFor();
  expect((await fetch(`${s.url}/admin/me`, { headers: jar })).status).toBe(401);
  expect(((await (await s.admin("/admin/audit-log?action=sso.sign_out")).json()) as any).data[0].actor.id).toBe("ada");
  await context.close();
}, 120_000);

test("a billing user gets billing; a user with no mapped role is refused", async () => {
  const bea = await signIn("bea");
  await see(bea.page.locator("body"), "Bea Billing (billing)");
  const jar = { cookie: `reelay_session=${(await cookieOf(bea.context))!.value}` };
  const me = (await (await fetch(`${s.url}/admin/me`, { headers: jar })).json()) as any;
  const res = await fetch(`${s.url}/admin/operators`, { method: "POST", headers: { ...jar, "content-type": "application/json", "x-csrf-token": me.csrf_token }, body: JSON.stringify({ name: "x", role: "admin" }) });
  expect(res.status).toBe(403);
  expect(((await res.json()) as any).error.code).toBe("insufficient_role");
  await bea.context.close();

  const mal = await signIn("mal");
  await see(mal.page.locator("body"), "sso_no_role");
  await see(mal.page.locator("body"), "'staff'");
  expect(await cookieOf(mal.context)).toBeUndefined();
  await mal.context.close();
}, 120_000);

test("idle and absolute expiry end a session with 401", async () => {
  const { context, page } = await signIn("bea");
  await see(page.locator("body"), "Bea Billing (billing)");
  const jar = { cookie: `reelay_session=${(await cookieOf(context))!.value}` };
  expect((await fetch(`${s.url}/admin/me`, { headers: jar })).status).toBe(200);
  const db = s.deps.database.db;
  await query(db, sql`UPDATE operator_sessions SET last_seen_at = now() - interval '31 minutes' WHERE subject = 'bea'`);
  const idle = await fetch(`${s.url}/admin/me`, { headers: jar });
  expect(idle.status).toBe(401);
  expect(((await idle.json()) as any).error.code).toBe("session_expired");
  // the console notices and asks to sign in again
  await page.reload();
  await page.getByRole("link", { name: "Sign in with single sign-on" }).waitFor();

  const again = await signIn("bea");
  const jar2 = { cookie: `reelay_session=${(await cookieOf(again.context))!.value}` };
  await query(db, sql`UPDATE operator_sessions SET expires_at = now() - interval '1 second' WHERE subject = 'bea'`);
  expect((await fetch(`${s.url}/admin/me`, { headers: jar2 })).status).toBe(401);
  await again.context.close();
  await context.close();
}, 120_000);

test("a forged or replayed state is refused", async () => {
  const forged = await fetch(`${s.url}/sso/callback?code=abc&state=forged-state`, { redirect: "manual" });
  expect(forged.status).toBe(400);
  expect(((await forged.json()) as any).error.code).toBe("invalid_state");

  // a real callback URL, used once by the browser, then replayed
  const context = await browser.newContext();
  const page = await context.newPage();
  let callback = "";
  page.on("request", (r) => {
    if (r.url().startsWith(`${s.url}/sso/callback`)) callback = r.url();
  });
  await page.goto(s.url + "/console");
  await page.getByRole("link", { name: "Sign in with single sign-on" }).click();
  await page.locator('input[name="login"]').fill("ada");
  await page.locator('input[name="password"]').fill("any");
  await page.getByRole("button", { name: "Sign-in" }).click();
  const cont = page.getByRole("button", { name: "Continue" });
  if (await cont.isVisible({ timeout: 5_000 }).catch(() => false)) await cont.click();
  await see(page.locator("body"), "Ada Admin (admin)");
  expect(callback).toContain("state=");
  const replay = await fetch(callback, { redirect: "manual" });
  expect(replay.status).toBe(400);
  expect(((await replay.json()) as any).error.code).toBe("invalid_state");
  await context.close();
  expect((await s.admin("/admin/me")).status).toBe(200); // the bootstrap token is untouched by all this
  void ADMIN_TOKEN;
}, 120_000);

test("a forged or replayed nonce is refused, and its sign-in cannot be retried", async () => {
  // the IdP URL /sso/login hands out, its nonce changed on the way to the IdP: the ID token then
  // carries a nonce this sign-in never issued (state, PKCE and the code are all genuine)
  const loginUrl = async () => new URL((await fetch(`${s.url}/sso/login`, { redirect: "manual" })).headers.get("location")!);
  const through = async (url: URL, login: string) => {
    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    const callback = page.waitForResponse((r) => r.url().startsWith(`${s.url}/sso/callback`));
    await page.goto(url.toString());
    await page.locator('input[name="login"]').fill(login);
    await page.locator('input[name="password"]').fill("any");
    await page.getByRole("button", { name: "Sign-in" }).click();
    const cont = page.getByRole("button", { name: "Continue" });
    if (await cont.isVisible({ timeout: 5_000 }).catch(() => false)) await cont.click();
    const res = await callback;
    const out = { status: res.status(), url: res.url(), code: res.status() === 400 ? ((await res.json()) as any).error.code : null, cookie: await cookieOf(context) };
    await context.close();
    return out;
  };
  const signIns = async () => ((await (await s.admin("/admin/audit-log?action=sso.sign_in&limit=500")).json()) as any).data.length;
  const before = await signIns();

  const first = await loginUrl();
  const usedNonce = first.searchParams.get("nonce")!;
  expect(usedNonce.length).toBeGreaterThan(20);
  const ok = await through(first, "ada");
  expect(ok.status).toBe(302);
  expect(ok.cookie).toBeDefined();

  const replayed = await loginUrl();
  expect(replayed.searchParams.get("nonce")).not.toBe(usedNonce); // a fresh nonce per sign-in
  replayed.searchParams.set("nonce", usedNonce);
  const forged = await loginUrl();
  forged.searchParams.set("nonce", "forged-nonce-0123456789abcdefghijklmno");
  const missing = await loginUrl();
  missing.searchParams.delete("nonce");
  for (const [what, url] of Object.entries({ replayed, forged, missing })) {
    const res = await through(url, "ada");
    expect(`${what}: ${res.status} ${res.code}`).toBe(`${what}: 400 invalid_nonce`);
    expect(res.cookie).toBeUndefined();
    // the refused sign-in's state is spent: the same callback again is an unknown sign-in
    const again = await fetch(res.url, { redirect: "manual" });
    expect(((await again.json()) as any).error.code).toBe("invalid_state");
  }
  expect(await signIns()).toBe(before + 1);
}, 120_000);
