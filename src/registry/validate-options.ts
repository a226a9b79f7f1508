/**
 * A model's plugin options, checked at boot: against the plugin's schema (`options`, TypeBox),
 * with the schema's defaults filled in, then by the plugin's own `validateOptions` for what a schema
 * cannot say. Every problem is one line naming the plugin, the model and the option, and all of
 * them are reported at once; a `validateOptions` that throws is reported as the plugin's bug, not
 * as a bare "undefined is not an object".
 */
import type { ModelConfig } from "../config.ts";
import { ConfigError } from "../errors.ts";
import { checkOptions, show, type ReelayPlugin } from "../plugin-sdk/index.ts";

/** The options `create` gets: validated, defaults filled in. Throws a ConfigError listing every problem. */
export function validatedOptions(plugin: ReelayPlugin, model: ModelConfig, at: string): Record<string, unknown> {
  const where = `model "${model.id}" (plugin "${plugin.name}")`;
  let options = model.options;
  const problems: string[] = [];
  if (plugin.options !== undefined) {
    const schema = plugin.options;
    if (typeof schema !== "object" || schema === null || (schema.type === undefined && schema.anyOf === undefined)) {
      throw new ConfigError(at, `plugin "${plugin.name}" declares \`options\` that is not a schema (build it with the SDK's Type.Object)`);
    }
    let checked: ReturnType<typeof checkOptions>;
    try {
      checked = checkOptions(schema, options);
    } catch (err) {
      // a plain JSON schema (no TypeBox kinds) or one from an incompatible TypeBox
      throw new ConfigError(at, `plugin "${plugin.name}" declares \`options\` its host cannot read (build it with the SDK's Type): ${(err as Error)?.message ?? String(err)}`);
    }
    options = checked.options;
    problems.push(...checked.problems.map((p) => `${where}: ${p.option ? `option "${p.option}"` : "options"}: ${p.message}`));
  }
  if (problems.length === 0 && plugin.validateOptions) {
    let more: unknown;
    try {
      more = plugin.validateOptions(options);
    } catch (err) {
      throw new ConfigError(at, `plugin "${plugin.name}" failed while checking the options of model "${model.id}" (a bug in the plugin's validateOptions): ${(err as Error)?.message ?? String(err)}`);
    }
    if (!Array.isArray(more) || more.some((p) => typeof p !== "string")) {
      throw new ConfigError(at, `plugin "${plugin.name}": validateOptions must return a list of problems (strings), got ${show(more)} for model "${model.id}"`);
    }
    problems.push(...more.map((p) => `${where}: ${p}`));
  }
  if (problems.length) throw new ConfigError(`${at}.options`, problems.length === 1 ? problems[0]! : `\n  ${problems.join("\n  ")}`);
  return options;
}
