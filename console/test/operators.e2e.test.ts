/**
 * Operators and the audit log in the console, in a real browser against reelay on the real
 * Postgres: the bootstrap token creates a billing operator (the token shown once) on the Operators
 * page; that operator signs in with it, is named in the header, grants credits through the API, and
 * finds the grant in the Audit log page under their own name; a viewer's change is refused with the
 * role it needs.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { ADMIN_TOKEN, startTestServer, type TestServer } from "../../test/support/harness.ts";
import { buildConsole } from "../build.ts";
import { launchBrowser, see, shot, watch } from "./browser.ts";

let s: TestServer;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  await buildConsole();
  s = await startTestServer();
  browser = await launchBrowser();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  watch(context, s.url);
  page = await context.newPage();
  page.setDefaultTimeout(15_000);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await s?.close();
});

async function signIn(token: string) {
  await page.goto(s.url + "/console");
  await page.getByLabel("Admin token or API key").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Overview" }).first().waitFor();
}

const nav = (name: string) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name }).click();

test("an operator made in the console signs in with its token; its change is in the audit log under its name", async () => {
  await signIn(ADMIN_TOKEN);
  await nav("Operators");
  await page.getByRole("heading", { name: "Operators" }).first().waitFor();
  await page.locator('input[name="operator-name"]').fill("Bea Billing");
  await page.locator('select[name="operator-role"]').selectOption("billing");
  await page.getByRole("button", { name: "Create operator" }).click();
  const token = (await page.getByRole("status").filter({ hasText: "shown this once" }).locator("p.mono").textContent())!.trim();
  expect(token).toStartWith("ro-");
  await see(page.getByRole("region", { name: "Operators" }), "Bea Billing");
  await shot(page, "operators");

  const acct = ((await (await s.admin("/admin/accounts", { body: { name: "audited-co" } })).json()) as any).id;
  await page.evaluate(() => sessionStorage.clear());
  await signIn(token);
  await see(page.locator("body"), "Bea Billing (billing)");
  const grant = await fetch(`${s.url}/admin/accounts/${acct}/credits`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ amount: 2_000_000, reason: "invoice 9" }) });
  expect(grant.status).toBe(200);
  await nav("Audit log");
  const log = page.getByRole("region", { name: "Audit log" });
  await see(log, "credits.grant");
  await see(log, "Bea Billing");
  await see(log, "invoice 9");
  await page.getByLabel("Action").fill("operator.*");
  await page.getByRole("button", { name: "Filter" }).click();
  await see(log, "operator.create");
  await see(log, "bootstrap token");
  await shot(page, "audit-log");

  // a billing operator cannot make operators: the page says which role it takes
  await nav("Operators");
  await page.locator('input[name="operator-name"]').fill("Nope");
  await page.getByRole("button", { name: "Create operator" }).click();
  await see(page.getByRole("alert"), "'admin' role");
}, 120_000);
