/**
 * What the boot log tells the person who just started reelay: where the console and the API docs
 * are, and — when REELAY_ADMIN_TOKEN is unset — that no account or key can be created until it is.
 */
import { afterAll, expect, test } from "bun:test";
import { createTestDatabase, dropDatabase } from "../support/harness.ts";
import { spawnServer, type ChildServer } from "../support/child-server.ts";

const cleanup: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
});

async function boot(env: Record<string, string>): Promise<ChildServer> {
  const databaseUrl = await createTestDatabase();
  cleanup.push(() => dropDatabase(databaseUrl));
  const server = await spawnServer({ DATABASE_URL: databaseUrl, ...env });
  cleanup.push(() => server.stop());
  for (let i = 0; i < 600 && !server.logLines().some((l) => l.msg === "reelay ready"); i++) await Bun.sleep(50);
  return server;
}

test("the ready line says where the console and the docs are, and they answer there", async () => {
  const server = await boot({});
  const ready = server.logLines().find((l) => l.msg === "reelay ready")!;
  expect(ready).toMatchObject({ console: `${server.url}/console`, docs: `${server.url}/docs` });
  expect((await fetch(ready.console as string)).status).toBe(200);
  expect((await fetch(ready.docs as string)).status).toBe(200);
  expect(server.logLines().filter((l) => String(l.msg).includes("REELAY_ADMIN_TOKEN"))).toEqual([]); // it is set: no warning
});

test("without REELAY_ADMIN_TOKEN the boot warns that the admin API and the operator console are closed", async () => {
  const server = await boot({ REELAY_ADMIN_TOKEN: "" });
  const warning = server.logLines().find((l) => l.level === 40 && String(l.msg).startsWith("REELAY_ADMIN_TOKEN is not set"));
  expect(warning?.msg).toContain("the admin API (/admin/*) and the console's operator view answer 401");
  expect((await server.admin("/admin/accounts")).status).toBe(401);
});
