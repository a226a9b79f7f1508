/**
 * A taken port stops `reelay serve` before the database, migrations or models are touched, with a
 * message naming the port (it used to fail ~6 s in, after migrations and model loading).
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = new URL("../../", import.meta.url).pathname;
const squatter = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("someone else") });
afterAll(() => squatter.stop(true));

test("port in use: exit 1 naming the port, before any database or model work", async () => {
  const dir = mkdtempSync(join(tmpdir(), "reelay-port-"));
  const dataDir = join(dir, "data");
  const proc = Bun.spawn(["bun", "src/main.ts", "serve"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", HOST: "127.0.0.1", PORT: String(squatter.port), REELAY_DATA_DIR: dataDir, REELAY_LOG_FORMAT: "json", REELAY_PLUGINS_DIR: "/nonexistent-reelay-plugins" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  expect(code).toBe(1);
  expect(err.trim()).toBe(`reelay: invalid configuration: PORT: port ${squatter.port} on 127.0.0.1 is already in use (another reelay or another program listens there); stop it or set PORT to a free port`);
  // nothing was started: no PGlite data dir, no migrations, no model loaded
  expect(existsSync(dataDir)).toBe(false);
  expect(out).not.toContain("migrations applied");
  expect(out).not.toContain("model served");
  expect(await (await fetch(`http://127.0.0.1:${squatter.port}/`)).text()).toBe("someone else");
  rmSync(dir, { recursive: true, force: true });
}, 30_000);
