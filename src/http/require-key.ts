import { Elysia } from "elysia";
import type { Principal } from "../auth/authenticate-key.ts";
import type { AppDeps } from "../deps.ts";
import { annotate } from "../ops/hooks.ts";
import { forbidden, modelNotFound } from "../errors.ts";
import { keyMayUse, type Capability, type RegisteredModel } from "../registry/model-registry.ts";

/** Resolves `Authorization: Bearer <key>` to `principal` for every route of the module using it. */
export const requireKey = (deps: Pick<AppDeps, "auth">) =>
  new Elysia().derive({ as: "scoped" }, async ({ request }) => {
    const principal = await deps.auth.authenticateRequest(request);
    annotate(request, { accountId: principal.accountId, keyPrefix: principal.keyPrefix });
    return { principal };
  });

/**
 * The model a request names, if this key may use it for `capability`. Unknown, forbidden and
 * wrong-capability models are all 404 model_not_found, as OpenAI answers.
 */
export function resolveModel(deps: Pick<AppDeps, "registry">, principal: Principal, modelId: string, capability: Capability): RegisteredModel {
  const model = deps.registry.get(modelId);
  if (!model || !keyMayUse(model, principal) || !model.capabilities.includes(capability)) throw modelNotFound(modelId);
  if (principal.scopes && !principal.scopes.includes(capability)) throw forbidden(`This API key lacks the '${capability}' scope.`);
  return model;
}
