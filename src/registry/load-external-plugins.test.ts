/**
 * External plugins through the real boot: good ones serve their models, and every kind of broken
 * plugin stops startServer with a message naming the file.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
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
  `export default { name: ${JSON.stringify(name)}, apiVersion: 2, ${extra} create() { return { chat: { complete: async () => ({ completion: { choices: [] } }), stream: async () => [] } }; } };`;

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

  test("a syntax error stops the boot naming the file, with every error and its line", async () => {
    const dir = pluginsDir({ "a-good.js": plugin("good-one"), "broken.js": "export default { name: 'x', apiVersion: 2, create( };\nconst a = ;\n" });
    const msg = await bootError(dir);
    expect(msg).toMatch(new RegExp(`plugin ${join(dir, "broken.js")}.*failed to load`));
    expect(msg).toContain(`line 1:52: Expected identifier but found "}"`);
    expect(msg).toContain("line 2:11: Unexpected ;");
    expect(msg).toContain("const a = ;");
  });

  test("a wrong apiVersion stops the boot naming the file and the versions; 1 (the SDK from inside the tree) says why", async () => {
    let dir = pluginsDir({ "old/index.js": plugin("old-plugin").replace("apiVersion: 2", "apiVersion: 1") });
    let msg = await bootError(dir);
    expect(msg).toContain(join(dir, "old/index.js"));
    expect(msg).toContain("`apiVersion` must be 2 (got 1)");
    expect(msg).toContain("rebuild it with @reelay/plugin-sdk 1.x");
    dir = pluginsDir({ "new.js": plugin("new-plugin").replace("apiVersion: 2", "apiVersion: 3") });
    msg = await bootError(dir);
    expect(msg).toContain("`apiVersion` must be 2 (got 3)");
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

  test("an unbundled plugin (a package import, or .ts) stops the boot with the build command, before anything is installed", async () => {
    // "yaml" is installed in reelay's node_modules: under `bun` it would resolve, in the binary it would not
    for (const imp of [`import left from "left-pad-not-installed";`, `import YAML from "yaml";`, `const m = await import("left-pad-not-installed");`]) {
      const dir = pluginsDir({ "needs-pkg.js": `${imp}\n${plugin("needs-pkg")}` });
      const msg = await bootError(dir);
      expect(msg).toContain(join(dir, "needs-pkg.js"));
      expect(msg).toMatch(/imports the package "(left-pad-not-installed|yaml)" at run time/);
      expect(msg).toContain("bun build");
    }
    const dir = pluginsDir({ "source.ts": plugin("source") });
    const msg = await bootError(dir);
    expect(msg).toContain(join(dir, "source.ts"));
    expect(msg).toContain("bun build");
  });

  test("under `bun`, a package a file outside the tree imports is not installed from npm (bunfig.toml: install.auto = disable)", () => {
    // what the import scan above refuses first; this is the runtime's own guard, as in the binary
    const dir = pluginsDir({ "forgot-to-bundle.js": `import leftPad from "left-pad";\nconsole.log("LOADED", leftPad("x", 3));` });
    const r = Bun.spawnSync([process.execPath, "-e", `await import(${JSON.stringify(join(dir, "forgot-to-bundle.js"))})`], { cwd: join(import.meta.dir, "../.."), stdout: "pipe", stderr: "pipe" });
    expect(r.stdout.toString()).not.toContain("LOADED");
    expect(r.stderr.toString()).toContain("Cannot find package 'left-pad'");
  });

  test("built-ins (node:*, bun:*, fs) and files beside the plugin may be imported", async () => {
    const dir = pluginsDir({ "lib/helper.js": "export const word = 'hi';", "uses.js": `import { join } from "node:path"; import fs from "fs"; import { word } from "./lib/helper.js";\n${plugin("uses-builtins")}` });
    const s = await boot(dir);
    await s.stop();
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

/** A plugin written in TypeScript against the SDK and bundled on its own, as a provider ships it. */
async function bundled(source: string): Promise<string> {
  // inside the project (tmp/ is git-ignored), so "@reelay/plugin-sdk" resolves like in a provider's project
  const scratch = join(import.meta.dir, "../../tmp");
  mkdirSync(scratch, { recursive: true });
  const dir = mkdtempSync(join(scratch, "plugin-src-"));
  try {
    writeFileSync(join(dir, "index.ts"), source);
    const out = await Bun.build({ entrypoints: [join(dir, "index.ts")], target: "bun", format: "esm" });
    if (!out.success) throw new AggregateError(out.logs, "build failed");
    return await out.outputs[0]!.text();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("model options and instances at boot", () => {
  const withOptions = (extra: string) => `
    import { definePlugin, Type } from "@reelay/plugin-sdk";
    export default definePlugin({
      name: "opts-plugin",
      models: [{ id: "opts-model", pricing: { inputPerMillion: 1, outputPerMillion: 1 }, options: { baseUrl: "http://x" } }],
      options: Type.Object({ baseUrl: Type.String({ pattern: "^https?://" }), retries: Type.Integer({ minimum: 0, default: 2 }), mode: Type.Union([Type.Literal("a"), Type.Literal("b")], { default: "a" }) }, { additionalProperties: false }),
      ${extra}
      create(ctx) { return { chat: { complete: async () => ({ completion: { id: "x", object: "chat.completion", created: 0, model: "m", choices: [{ index: 0, message: { role: "assistant", content: String(ctx.options.retries) }, finish_reason: "stop" }] } }) } }; },
    });`;

  test("every option problem is one line naming plugin, model and option", async () => {
    const dir = pluginsDir({ "opts.js": await bundled(withOptions("")) });
    const models = join(dir, "models.json");
    writeFileSync(models, JSON.stringify({ models: [{ id: "opts-model", plugin: "opts-plugin", options: { baseUrl: "ftp://x", retries: -1, mode: "c", extra: true }, pricing: { inputPerMillion: 1 } }] }));
    const msg = await bootError(dir, { REELAY_MODELS_FILE: models });
    expect(msg).toContain(`model "opts-model" (plugin "opts-plugin"): option "baseUrl": expected string to match '^https?://' (got "ftp://x")`);
    expect(msg).toContain(`model "opts-model" (plugin "opts-plugin"): option "retries": expected integer to be greater or equal to 0 (got -1)`);
    expect(msg).toContain(`model "opts-model" (plugin "opts-plugin"): option "mode": must be one of "a", "b" (got "c")`);
    expect(msg).toContain(`model "opts-model" (plugin "opts-plugin"): option "extra": unknown option`);
  });

  test("a validateOptions that throws is reported as the plugin's bug, naming plugin and model", async () => {
    const dir = pluginsDir({ "opts.js": await bundled(withOptions(`validateOptions(o) { return (o as any).nested.deeper ? [] : []; },`)) });
    const msg = await bootError(dir);
    expect(msg).toContain(`plugin "opts-plugin" failed while checking the options of model "opts-model" (a bug in the plugin's validateOptions)`);
  });

  test("an options object that is not a TypeBox schema stops the boot naming the plugin", async () => {
    const dir = pluginsDir({ "raw.js": plugin("raw-schema", `models: [{ id: "raw-model", pricing: {} }], options: { type: "object", properties: {} },`) });
    expect(await bootError(dir)).toContain(`plugin "raw-schema" declares \`options\` its host cannot read`);
  });

  test("an instance the host cannot call stops the boot: what is missing, which plugin and model", async () => {
    const bad = `export default { name: "half", apiVersion: 2, models: [{ id: "half-model", pricing: {} }], create() { return { chat: { stream: async () => [] }, video: { submit: async () => ({ handle: "h" }) } }; } };`;
    const msg = await bootError(pluginsDir({ "half.js": bad }));
    expect(msg).toContain(`plugin "half" gave model "half-model" an unusable instance: chat has no complete() function; video needs submit() and poll() functions`);
  });
});
