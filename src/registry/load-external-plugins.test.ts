/**
 * External plugins through the real boot: good ones serve their models, and every kind of broken
 * plugin stops startServer with a message naming the file.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildEchoPlugin } from "../../examples/echo-plugin/build.ts";
import { ADMIN_TOKEN, createTestDatabase, dropDatabase, testConfig } from "../../test/support/harness.ts";
import { startServer } from "../boot.ts";
import { createLogger } from "../logger.ts";

let databaseUrl: string;
beforeAll(async () => { databaseUrl = await createTestDatabase(); });
afterAll(() => dropDatabase(databaseUrl));

const pluginsDir = (files: Record<string, string>) => {
  const dir = mkdtempSync(join(tmpdir(), "reelay-plugins-"));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
};
const boot = (dir: string, env: Record<string, string> = {}) => {
  const config = testConfig({ DATABASE_URL: databaseUrl, REELAY_PLUGINS_DIR: dir, ...env });
  return startServer(config, { logger: createLogger(config) });
};
const bootError = async (dir: string, env?: Record<string, string>) => {
  const r = await boot(dir, env).then(async (s) => { await s.stop(); return null; }, (e: Error) => e);
  if (!r) throw new Error("boot succeeded");
  return r.message;
};
const plugin = (name: string, extra = "") =>
  `export default { name: ${JSON.stringify(name)}, apiVersion: 1, ${extra} create() { return { chat: { complete: async () => ({ completion: { choices: [] } }), stream: async () => [] } }; } };`;

describe("external plugins at boot", () => {
  test("a built plugin (folder with index.js) serves its models through /v1", async () => {
    const dir = mkdtempSync(join(tmpdir(), "reelay-plugins-"));
    mkdirSync(join(dir, "echo-plugin"));
    buildEchoPlugin(join(dir, "echo-plugin", "index.js"));
    writeFileSync(join(dir, "README.md"), "not a plugin");
    const s = await boot(dir);
    try {
      const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" };
      const acct = (await (await fetch(`${s.url}/admin/accounts`, { method: "POST", headers: admin, body: JSON.stringify({ name: "p", credits: 1_000_000 }) })).json()) as { id: string };
      const key = (await (await fetch(`${s.url}/admin/accounts/${acct.id}/keys`, { method: "POST", headers: admin, body: JSON.stringify({ name: "k" }) })).json()) as { key: string };
      const models = (await (await fetch(`${s.url}/v1/models`, { headers: { authorization: `Bearer ${key.key}` } })).json()) as { data: Array<{ id: string }> };
      expect(models.data.map((m) => m.id)).toEqual(expect.arrayContaining(["echo", "solid-colour", "preview-motion", "use-lite"]));
    } finally {
      await s.stop();
    }
  });

  test("a syntax error stops the boot naming the file", async () => {
    const dir = pluginsDir({ "a-good.js": plugin("good-one"), "broken.js": "export default { name: 'x', apiVersion: 1, create( };" });
    expect(await bootError(dir)).toMatch(new RegExp(`plugin ${join(dir, "broken.js")}.*failed to load`));
  });

  test("a wrong apiVersion stops the boot naming the file and the versions", async () => {
    const dir = pluginsDir({ "old/index.js": plugin("old-plugin").replace("apiVersion: 1", "apiVersion: 0") });
    const msg = await bootError(dir);
    expect(msg).toContain(join(dir, "old/index.js"));
    expect(msg).toContain("`apiVersion` must be 1 (got 0)");
  });

  test("two plugins claiming one model id stop the boot", async () => {
    const models = `models: [{ id: "shared-model", pricing: { inputPerMillion: 1 } }],`;
    const dir = pluginsDir({ "one.js": plugin("one", models), "two.mjs": plugin("two", models) });
    expect(await bootError(dir)).toContain(`model "shared-model": claimed by both plugin "one" and plugin "two"`);
  });

  test("a plugin claiming a built-in model id stops the boot", async () => {
    const dir = pluginsDir({ "thief.js": plugin("thief", `models: [{ id: "preview-motion", pricing: { perSecond: 1 } }],`) });
    expect(await bootError(dir)).toContain(`"preview-motion": claimed by both plugin "preview-video" and plugin "thief"`);
  });

  test("a plugin reusing a built-in plugin's name stops the boot", async () => {
    const dir = pluginsDir({ "fake-preview.js": plugin("preview-video") });
    expect(await bootError(dir)).toContain(`"preview-video"`);
  });

  test("an unbundled plugin (bare import, or .ts) stops the boot with the build command", async () => {
    let dir = pluginsDir({ "needs-pkg.js": `import left from "left-pad-not-installed";\n${plugin("needs-pkg")}` });
    let msg = await bootError(dir);
    expect(msg).toContain(join(dir, "needs-pkg.js"));
    expect(msg).toContain("bun build");
    dir = pluginsDir({ "source.ts": plugin("source") });
    msg = await bootError(dir);
    expect(msg).toContain(join(dir, "source.ts"));
    expect(msg).toContain("bun build");
  });

  test("invalid exports and declarations stop the boot with the problem named", async () => {
    const cases: Array<[string, string]> = [
      ["export const x = 1;", "default export must be a ReelayPlugin"],
      [plugin("bad-models", `models: [{ id: "m", pricing: { perSecond: -1 } }],`), "models[0].pricing.perSecond"],
      [plugin("no create").replace(/create\(\).*$/, "};"), "`name` must be a plugin name"],
    ];
    for (const [text, problem] of cases) {
      const dir = pluginsDir({ "p.js": text });
      const msg = await bootError(dir);
      expect(msg).toContain(join(dir, "p.js"));
      expect(msg).toContain(problem);
    }
  });
});
