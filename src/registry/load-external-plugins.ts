/**
 * External plugins: every `*.js` / `*.mjs` file directly inside the plugins directory (or
 * `<dir>/index.js` of a sub-folder) is imported at boot. A compiled reelay cannot resolve packages
 * for such a file, so a plugin must be a single pre-bundled ES module whose default export is a
 * ReelayPlugin, taking anything else from its context (`ctx.fetch`, `ctx.host`, …).
 * A plugin that fails to load or is invalid stops the boot with its file named.
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { ConfigError } from "../config.ts";
import type { Logger } from "../logger.ts";
import { PLUGIN_API_VERSION, type ReelayPlugin } from "../plugin-sdk/index.ts";

export async function loadExternalPlugins(dir: string, logger: Logger): Promise<ReelayPlugin[]> {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return [];
  const files = readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const full = join(dir, name);
      if (statSync(full).isDirectory()) {
        const index = ["index.js", "index.mjs"].map((f) => join(full, f)).find((f) => existsSync(f));
        return index ? [index] : [];
      }
      return /\.(m?js)$/.test(name) ? [full] : [];
    });
  const plugins: ReelayPlugin[] = [];
  for (const file of files) {
    let mod: { default?: unknown };
    try {
      mod = await import(pathToFileURL(file).href);
    } catch (e) {
      throw new ConfigError(`plugin ${file}`, `failed to load: ${(e as Error).message}`);
    }
    const problem = invalidPlugin(mod.default);
    if (problem) throw new ConfigError(`plugin ${file}`, problem);
    const plugin = mod.default as ReelayPlugin;
    logger.info({ plugin: plugin.name, file, models: plugin.models?.map((m) => m.id) ?? [] }, "external plugin loaded");
    plugins.push(plugin);
  }
  return plugins;
}

function invalidPlugin(p: unknown): string | null {
  if (!p || typeof p !== "object") return "its default export must be a ReelayPlugin object";
  const o = p as Record<string, unknown>;
  if (typeof o.name !== "string" || !/^[a-z0-9][\w.-]*$/i.test(o.name)) return "`name` must be a plugin name (letters, digits, . _ -)";
  if (o.apiVersion !== PLUGIN_API_VERSION) return `\`apiVersion\` must be ${PLUGIN_API_VERSION} (got ${JSON.stringify(o.apiVersion)})`;
  if (typeof o.create !== "function") return "`create(ctx)` must be a function";
  if (o.models !== undefined && !Array.isArray(o.models)) return "`models` must be a list of model declarations";
  for (const [i, m] of ((o.models as unknown[]) ?? []).entries()) {
    const d = m as Record<string, unknown>;
    if (typeof d?.id !== "string" || !d.id) return `models[${i}].id must be a string`;
    if (!d.pricing || typeof d.pricing !== "object") return `models[${i}].pricing must be an object`;
  }
  return null;
}
