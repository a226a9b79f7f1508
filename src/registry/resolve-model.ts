/**
 * Which model serves a request, decided once for every route: the key's scope for the route's
 * capability, then the model's existence and the key's model list, then what the model can do.
 * Each failure says something different to the client, so each has its own answer.
 */
import { ApiError, forbidden, modelNotFound } from "../errors.ts";
import { keyMayUse, type Capability, type ModelRegistry, type RegisteredModel } from "./model-registry.ts";
import type { Scope } from "../accounts/api-keys.ts";

type KeyRights = { scopes: Scope[] | null; allowedModels: string[] | null };

const SERVES: Record<Capability, string> = { chat: "chat completions", embeddings: "embeddings", video: "video generations" };

/**
 * - key without the route's scope → 403 `insufficient_scope`, naming the scope and the key's scopes;
 * - unknown model, or one outside the key's model list → 404 `model_not_found` (as OpenAI answers);
 * - a model the key may use that cannot do this → 400 `model_not_supported`, saying what the model
 *   is and which models of the right kind the key may use.
 */
export function resolveModel(deps: { registry: ModelRegistry }, key: KeyRights, modelId: string, capability: Capability): RegisteredModel {
  if (key.scopes && !key.scopes.includes(capability)) {
    throw forbidden(`This API key lacks the '${capability}' scope needed for ${SERVES[capability]} (its scopes: ${key.scopes.join(", ") || "none"}). Ask the operator for a key with the '${capability}' scope.`);
  }
  const model = deps.registry.get(modelId);
  if (!model || !keyMayUse(model, key)) throw modelNotFound(modelId);
  if (!model.capabilities.includes(capability)) {
    const usable = modelsFor(deps.registry, key, capability);
    const kind = model.capabilities.join(" and ");
    const options = usable.length ? `${capitalise(capability)} models this key may use: ${usable.join(", ")}.` : `This key may use no ${capability} model.`;
    throw new ApiError(400, "invalid_request_error", `'${model.id}' is ${/^[aeiou]/.test(kind) ? "an" : "a"} ${kind} model and cannot serve ${SERVES[capability]}. ${options}`, {
      code: "model_not_supported",
      param: "model",
    });
  }
  return model;
}

/** The model's fallbacks (in order) that this key may use and that can serve `capability`. */
export function fallbackModels(deps: { registry: ModelRegistry }, key: KeyRights, model: RegisteredModel, capability: Capability): RegisteredModel[] {
  const out: RegisteredModel[] = [];
  for (const id of model.fallbacks) {
    const m = deps.registry.get(id);
    if (m && m.capabilities.includes(capability) && keyMayUse(m, key)) out.push(m);
  }
  return out;
}

/** ids of the models this key may use for `capability`, in registry order */
export function modelsFor(registry: ModelRegistry, key: KeyRights, capability: Capability): string[] {
  return registry.list().filter((m) => m.capabilities.includes(capability) && keyMayUse(m, key)).map((m) => m.id);
}

const capitalise = (s: string) => s[0]!.toUpperCase() + s.slice(1);
