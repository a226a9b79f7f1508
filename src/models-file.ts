/**
 * The models file (REELAY_MODELS_FILE, JSON or YAML): the models reelay serves, whether the
 * built-in ones stay, and the price plans. Read once at boot by loadConfig; every problem stops the
 * boot with a ConfigError naming the entry and key (`models[2].pricing`).
 */
import { readFileSync } from "node:fs";
import type { ModelConfig } from "./config.ts";
import { ConfigError } from "./errors.ts";
import type { ModelPricing } from "./plugin-sdk/index.ts";
// the SDK's own file, not its package: config is read before reelay listens, when no package may be loaded yet (test/architecture)
import { isVideoSize, problemsWithPricing } from "../packages/plugin-sdk/src/pricing.ts";

/** a model id or alias: what a client types as `model` */
const MODEL_ID = /^[A-Za-z0-9][\w.:/-]{0,127}$/;

export interface ModelsFile {
  models: ModelConfig[];
  /** keep the built-in models (default true); the file's entries replace built-ins of the same id */
  builtins: boolean;
  /** price plans (src/billing/plans.ts) */
  plans: PlanConfig[];
}

/** A price plan of the models file: a percentage on every model's prices and/or per-model prices. */
export interface PlanConfig {
  id: string;
  name: string | null;
  /** basis points of a percent (adjustmentPercent −12.5 → −1250) */
  adjustmentBp: number;
  models: Record<string, ModelPricing>;
}

export function loadModelsFile(path: string): ModelsFile {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new ConfigError("REELAY_MODELS_FILE", `cannot read ${path}: ${(e as Error).message}`);
  }
  let doc: unknown;
  try {
    // yaml is loaded only for a YAML file (with ioredis and pino-pretty on demand: 2 MB less idle RSS, src/rate-limit/index.ts)
    doc = /\.ya?ml$/i.test(path) ? (require("yaml") as typeof import("yaml")).parse(text) : JSON.parse(text);
  } catch (e) {
    throw new ConfigError("REELAY_MODELS_FILE", `cannot parse ${path}: ${(e as Error).message}`);
  }
  return parseModelsFile(doc);
}

export function parseModelsFile(doc: unknown): ModelsFile {
  if (doc && typeof doc === "object" && !Array.isArray(doc)) {
    for (const k of Object.keys(doc)) if (!["models", "builtins", "plans"].includes(k)) throw new ConfigError(k, "unknown top-level key; expected `models` and optionally `builtins: false` and `plans`");
  }
  const builtins = (doc as { builtins?: unknown })?.builtins ?? true;
  if (typeof builtins !== "boolean") throw new ConfigError("builtins", "expected true or false");
  const models = parseModels(doc);
  return { models, builtins, plans: parsePlans((doc as { plans?: unknown })?.plans) };
}

/**
 * `plans:` — a list of `{id, name?, adjustmentPercent?, models?: {<model id>: {inputPerMillion, …}}}`.
 * Model ids are checked against the served models at boot (a plan may name a built-in model).
 */
export function parsePlans(list: unknown): PlanConfig[] {
  if (list === undefined) return [];
  if (!Array.isArray(list)) throw new ConfigError("plans", "expected a list of plans");
  const seen = new Set<string>();
  return list.map((p, i) => {
    const at = (k: string) => `plans[${i}]${k ? "." + k : ""}`;
    if (!p || typeof p !== "object" || Array.isArray(p)) throw new ConfigError(at(""), "expected an object");
    const o = p as Record<string, unknown>;
    for (const k of Object.keys(o)) if (!["id", "name", "adjustmentPercent", "models"].includes(k)) throw new ConfigError(at(k), "unknown key; expected id, name, adjustmentPercent, models");
    if (typeof o.id !== "string" || !/^[A-Za-z0-9][\w.:-]{0,63}$/.test(o.id)) throw new ConfigError(at("id"), "expected a plan id (letters, digits, . _ : -; at most 64)");
    if (seen.has(o.id)) throw new ConfigError(at("id"), `duplicate plan id "${o.id}"`);
    seen.add(o.id);
    const pct = o.adjustmentPercent ?? 0;
    const bp = typeof pct === "number" ? Math.round(pct * 100) : NaN;
    if (typeof pct !== "number" || !Number.isFinite(pct) || pct < -100 || pct > 1000 || Math.abs(bp - pct * 100) > 1e-6) throw new ConfigError(at("adjustmentPercent"), "expected a percentage from -100 to 1000 with at most two decimals");
    const models: Record<string, ModelPricing> = {};
    if (o.models !== undefined) {
      if (!o.models || typeof o.models !== "object" || Array.isArray(o.models)) throw new ConfigError(at("models"), "expected model id → prices");
      for (const [id, prices] of Object.entries(o.models)) {
        if (!prices || typeof prices !== "object" || Array.isArray(prices)) throw new ConfigError(at(`models.${id}`), "expected prices");
        const [problem] = problemsWithPricing(prices, at(`models.${id}`));
        if (problem) throw new ConfigError(at(`models.${id}`), problem);
        const out = { ...(prices as ModelPricing) };
        models[id] = out;
      }
    }
    return { id: o.id, name: typeof o.name === "string" ? o.name : null, adjustmentBp: bp, models };
  });
}

export function parseModels(doc: unknown): ModelConfig[] {
  const list = (doc as { models?: unknown })?.models;
  if (!Array.isArray(list)) throw new ConfigError("models", "expected a list under the top-level key `models`");
  const seen = new Set<string>();
  const models = list.map((m, i): ModelConfig => {
    const at = (k: string) => `models[${i}]${k ? "." + k : ""}`;
    if (!m || typeof m !== "object") throw new ConfigError(at(""), "expected an object");
    const o = m as Record<string, unknown>;
    for (const k of Object.keys(o)) {
      if (!["id", "plugin", "options", "pricing", "maxOutputTokens", "contextLength", "ownedBy", "description", "allowPrivateNetwork", "fallbacks", "sizes", "seconds", "aliases"].includes(k)) throw new ConfigError(at(k), "unknown key");
    }
    if (typeof o.id !== "string" || !MODEL_ID.test(o.id)) throw new ConfigError(at("id"), "expected a model id (letters, digits, . _ : / -)");
    if (seen.has(o.id)) throw new ConfigError(at("id"), `duplicate model id "${o.id}"`);
    seen.add(o.id);
    if (typeof o.plugin !== "string" || !o.plugin) throw new ConfigError(at("plugin"), "expected a plugin name");
    if (o.options !== undefined && (typeof o.options !== "object" || o.options === null || Array.isArray(o.options))) throw new ConfigError(at("options"), "expected an object");
    const [priceProblem] = problemsWithPricing(o.pricing ?? {}, at("pricing"));
    if (priceProblem) {
      const [key, ...rest] = priceProblem.split(": ");
      throw new ConfigError(rest.length ? key! : at("pricing"), rest.length ? rest.join(": ") : priceProblem);
    }
    const pricing = { ...((o.pricing as ModelPricing | undefined) ?? {}) };
    if (o.sizes !== undefined && (!Array.isArray(o.sizes) || o.sizes.length === 0 || o.sizes.some((v) => !isVideoSize(v)))) {
      throw new ConfigError(at("sizes"), 'expected a list of sizes like "1280x720" (even numbers from 16 to 4096)');
    }
    if (o.seconds !== undefined && (!Array.isArray(o.seconds) || o.seconds.length === 0 || o.seconds.some((v) => !Number.isSafeInteger(v) || v < 1))) {
      throw new ConfigError(at("seconds"), "expected a list of whole seconds (positive integers)");
    }
    for (const k of ["maxOutputTokens", "contextLength"] as const) {
      if (o[k] !== undefined && (!Number.isSafeInteger(o[k]) || (o[k] as number) <= 0)) throw new ConfigError(at(k), "must be a positive integer");
    }
    if (o.allowPrivateNetwork !== undefined && typeof o.allowPrivateNetwork !== "boolean") throw new ConfigError(at("allowPrivateNetwork"), "expected true or false");
    if (o.fallbacks !== undefined && (!Array.isArray(o.fallbacks) || o.fallbacks.some((f) => typeof f !== "string" || !f) || new Set(o.fallbacks).size !== o.fallbacks.length)) {
      throw new ConfigError(at("fallbacks"), "expected a list of distinct model ids");
    }
    if (o.aliases !== undefined && (!Array.isArray(o.aliases) || o.aliases.some((a) => typeof a !== "string" || !MODEL_ID.test(a)) || new Set(o.aliases).size !== o.aliases.length)) {
      throw new ConfigError(at("aliases"), "expected a list of distinct model names (letters, digits, . _ : / -)");
    }
    return {
      id: o.id,
      plugin: o.plugin,
      options: (o.options as Record<string, unknown>) ?? {},
      pricing,
      maxOutputTokens: o.maxOutputTokens as number | undefined,
      contextLength: o.contextLength as number | undefined,
      ownedBy: typeof o.ownedBy === "string" ? o.ownedBy : undefined,
      description: typeof o.description === "string" ? o.description : undefined,
      allowPrivateNetwork: o.allowPrivateNetwork === true ? true : undefined,
      ...(Array.isArray(o.fallbacks) && o.fallbacks.length ? { fallbacks: o.fallbacks as string[] } : {}),
      ...(o.sizes ? { sizes: o.sizes as string[] } : {}),
      ...(o.seconds ? { seconds: o.seconds as number[] } : {}),
      ...(Array.isArray(o.aliases) && o.aliases.length ? { aliases: o.aliases as string[] } : {}),
    };
  });
  checkModelNames(models);
  return models;
}

/**
 * Every name a client may ask for (ids and aliases) names one model: a second use is refused at
 * boot, naming both places, never resolved by order. Also run on the final list (built-in and
 * external plugins' models included) by the registry.
 */
export function checkModelNames(models: Array<Pick<ModelConfig, "id" | "aliases">>, where = (i: number) => `models[${i}]`): void {
  const owner = new Map<string, string>();
  for (const [i, m] of models.entries()) owner.set(m.id, `the id of ${where(i)} ("${m.id}")`);
  for (const [i, m] of models.entries()) {
    for (const alias of m.aliases ?? []) {
      const taken = owner.get(alias);
      if (taken) throw new ConfigError(`${where(i)}.aliases`, `"${alias}" (an alias of model "${m.id}") is already ${taken}; a name may belong to one model only`);
      owner.set(alias, `an alias of ${where(i)} (model "${m.id}")`);
    }
  }
}
