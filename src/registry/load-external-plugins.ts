/**
 * External plugins, loaded at boot from REELAY_PLUGINS_DIR (default `plugins/` beside the binary).
 *
 * Packaging rule (docs/writing-a-plugin.md): a plugin is ONE pre-bundled ES module whose default
 * export is a ReelayPlugin — either `<dir>/<name>.js|.mjs`, or a folder `<dir>/<name>/` with
 * `index.js|index.mjs` (room for a README or licence beside it). A compiled reelay has no
 * node_modules to resolve packages from, so a plugin imports nothing at run time (`node:*` and
 * `bun:*` built-ins excepted) and takes fetch, image decoding, MP4 encoding and token counting from
 * its context. Dotfiles, `*.map` and `*.d.ts` are ignored; a folder without an index is skipped
 * with a warning (it is probably not a plugin).
 *
 * Any problem stops the boot with a ConfigError naming the file: a `.ts` file (not built), an import
 * of a package (found by scanning the file before it is imported, so `bun src/main.ts` refuses it
 * exactly as the binary does, instead of Bun installing it from npm), a file that fails to import
 * (every syntax error is listed, with its line), an invalid export, a wrong apiVersion, a name
 * already taken by a built-in or another external plugin. Stopping, rather than skipping with a
 * warning, is deliberate: a skipped plugin means its models answer 404 in production while the
 * service looks healthy; a failed boot is noticed at deploy time.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { ConfigError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { PLUGIN_API_VERSION, problemsWithPricing, SDK_VERSION, type ReelayPlugin } from "../plugin-sdk/index.ts";

const BUILD_HINT = "build it into one file first: bun build <entry>.ts --outfile <name>.js --target bun --format esm (see docs/writing-a-plugin.md)";

/** The plugin files in `dir`, in name order. */
export function findPluginFiles(dir: string, logger: Pick<Logger, "warn">): string[] {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return [];
  return readdirSync(dir)
    .filter((name) => !name.startsWith(".") && !name.endsWith(".map") && !name.endsWith(".d.ts"))
    .sort()
    .flatMap((name) => {
      const full = join(dir, name);
      if (statSync(full).isDirectory()) {
        const index = ["index.js", "index.mjs"].map((f) => join(full, f)).find((f) => existsSync(f));
        if (!index) logger.warn({ dir: full }, "folder in the plugins directory has no index.js or index.mjs; skipped");
        return index ? [index] : [];
      }
      if (/\.(m|c)?tsx?$/.test(name)) throw new ConfigError(`plugin ${full}`, `TypeScript is not loaded at run time; ${BUILD_HINT}`);
      return /\.m?js$/.test(name) ? [full] : [];
    });
}

/** `reserved`: names of the built-in plugins, which an external plugin may not reuse. */
export async function loadExternalPlugins(dir: string, logger: Logger, reserved: Iterable<string>): Promise<ReelayPlugin[]> {
  const fileOf = new Map<string, string>([...reserved].map((n) => [n, "built in"]));
  const plugins: ReelayPlugin[] = [];
  for (const file of findPluginFiles(dir, logger)) {
    const pkg = packageImport(file);
    if (pkg) throw new ConfigError(`plugin ${file}`, `imports the package "${pkg}" at run time; a plugin must bundle its dependencies (the binary has no node_modules) — ${BUILD_HINT}`);
    let mod: { default?: unknown };
    try {
      mod = await import(pathToFileURL(file).href);
    } catch (e) {
      const message = describeLoadError(e);
      const bare = /cannot find (package|module)/i.test(message) ? `; external plugins cannot import packages at run time — ${BUILD_HINT}` : "";
      throw new ConfigError(`plugin ${file}`, `failed to load: ${message}${bare}`);
    }
    const problem = invalidPlugin(mod.default);
    if (problem) throw new ConfigError(`plugin ${file}`, problem);
    const plugin = mod.default as ReelayPlugin;
    const taken = fileOf.get(plugin.name);
    if (taken) throw new ConfigError(`plugin ${file}`, `the name "${plugin.name}" is already used by ${taken === "built in" ? "a built-in plugin" : taken}`);
    fileOf.set(plugin.name, file);
    logger.info({ plugin: plugin.name, file, sdkVersion: plugin.sdkVersion ?? null, models: plugin.models?.map((m) => m.id) ?? [] }, "external plugin loaded");
    plugins.push(plugin);
  }
  return plugins;
}

function invalidPlugin(p: unknown): string | null {
  if (!p || typeof p !== "object") return "its default export must be a ReelayPlugin object (export default definePlugin({...}))";
  const o = p as Record<string, unknown>;
  if (typeof o.name !== "string" || !/^[a-z0-9][\w.-]*$/i.test(o.name)) return "`name` must be a plugin name (letters, digits, . _ -)";
  if (o.apiVersion !== PLUGIN_API_VERSION) {
    const old = o.apiVersion === 1 ? " (apiVersion 1 is the SDK that lived inside reelay's tree; its errors cannot be recognised across bundles)" : "";
    return `plugin "${o.name}": \`apiVersion\` must be ${PLUGIN_API_VERSION} (got ${JSON.stringify(o.apiVersion)})${old}; rebuild it with @reelay/plugin-sdk ${SDK_VERSION.split(".")[0]}.x`;
  }
  if (o.options !== undefined && (typeof o.options !== "object" || o.options === null)) return `plugin "${o.name}": \`options\` must be a schema (Type.Object from the SDK)`;
  if (typeof o.create !== "function") return `plugin "${o.name}": \`create(ctx)\` must be a function`;
  if (o.validateOptions !== undefined && typeof o.validateOptions !== "function") return `plugin "${o.name}": \`validateOptions\` must be a function`;
  if (o.models !== undefined && !Array.isArray(o.models)) return `plugin "${o.name}": \`models\` must be a list of model declarations`;
  const ids = new Set<string>();
  for (const [i, m] of ((o.models as unknown[]) ?? []).entries()) {
    const d = m as Record<string, unknown>;
    if (typeof d?.id !== "string" || !/^[A-Za-z0-9][\w.:/-]{0,127}$/.test(d.id)) return `plugin "${o.name}": models[${i}].id must be a model id (letters, digits, . _ : / -)`;
    if (ids.has(d.id)) return `plugin "${o.name}": declares model "${d.id}" twice`;
    ids.add(d.id);
    const [problem] = problemsWithPricing(d.pricing, `models[${i}].pricing`);
    if (problem) return `plugin "${o.name}": ${problem}`;
  }
  return null;
}

const BUILTIN = new Set(builtinModules);

/**
 * The first import of a package in `file`, if any. Built-ins (`node:*`, `bun:*`, `fs` …) and file
 * paths resolve the same under `bun` and in the binary; a package does not (the binary has no
 * node_modules, and under `bun` Bun would install it from npm at boot unless bunfig.toml says no).
 * A file that cannot even be scanned is left to the import, which reports its syntax errors.
 */
function packageImport(file: string): string | null {
  let imports: Array<{ path: string }>;
  try {
    imports = new Bun.Transpiler({ loader: "js" }).scanImports(readFileSync(file, "utf8"));
  } catch {
    return null;
  }
  const isPackage = (p: string) => !/^(node|bun):/.test(p) && !BUILTIN.has(p) && !/^(\.{1,2}\/|\/|file:)/.test(p);
  return imports.find((i) => isPackage(i.path))?.path ?? null;
}

/** Bun reports a file that does not parse as "N errors building <file>": list each with its line. */
function describeLoadError(e: unknown): string {
  const errors = (e as { errors?: unknown[] })?.errors;
  const head = (e as Error)?.message ?? String(e);
  if (!Array.isArray(errors) || errors.length === 0) return head;
  const lines = errors.slice(0, 10).map((x) => {
    const m = x as { message?: string; position?: { line?: number; column?: number; lineText?: string } | null };
    const at = m.position ? `line ${m.position.line}:${m.position.column}: ` : "";
    const text = m.position?.lineText ? `\n      ${m.position.lineText.trim().slice(0, 160)}` : "";
    return `\n    ${at}${m.message ?? String(x)}${text}`;
  });
  return `${head}:${lines.join("")}${errors.length > 10 ? `\n    … and ${errors.length - 10} more` : ""}`;
}
