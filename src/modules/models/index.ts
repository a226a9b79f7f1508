import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { modelNotFound } from "../../errors.ts";
import { authErrors, ErrorEnvelope } from "../../http/schemas.ts";
import { requireKey } from "../../http/require-key.ts";
import { keyMayUse, type RegisteredModel } from "../../registry/model-registry.ts";
import { applyPlan, effectiveRate, type PricePlan } from "../../billing/index.ts";

const Model = t.Object(
  {
    id: t.String(),
    object: t.Literal("model"),
    created: t.Integer(),
    owned_by: t.String(),
    capabilities: t.Array(t.Union([t.Literal("chat"), t.Literal("embeddings"), t.Literal("video")]), {
      description: "What the model serves (an extension to OpenAI's model object): chat → POST /v1/chat/completions, embeddings → POST /v1/embeddings, video → POST /v1/videos/generations.",
    }),
    description: t.Optional(t.String({ description: "what the model does, when its plugin or the models file says (reelay extension)" })),
    pricing: t.Object(
      {
        input_per_million: t.Nullable(t.Number({ description: "micro-dollars per million input tokens" })),
        output_per_million: t.Nullable(t.Number({ description: "micro-dollars per million output tokens" })),
        per_second: t.Nullable(t.Number({ description: "micro-dollars per second of video" })),
        plan: t.Nullable(t.String({ description: "the price plan these prices come from (null: list prices)" })),
      },
      { description: "what this key's account pays (reelay extension): its price plan applied; a request's cost is computed exactly and rounded up once, to a micro-dollar" },
    ),
  },
  { examples: [{ id: "use-lite", object: "model", created: 1763760000, owned_by: "reelay", capabilities: ["embeddings"], pricing: { input_per_million: 20_000, output_per_million: null, per_second: null, plan: null } }] },
);

const view = (m: RegisteredModel, plan: PricePlan | null) => {
  const p = applyPlan(plan, m.id, m.pricing);
  return {
    id: m.id, object: "model" as const, created: m.createdAt, owned_by: m.ownedBy, capabilities: m.capabilities, ...(m.description ? { description: m.description } : {}),
    pricing: { input_per_million: effectiveRate(p, "inputPerMillion"), output_per_million: effectiveRate(p, "outputPerMillion"), per_second: effectiveRate(p, "perSecond"), plan: p.plan ?? null },
  };
};

/** GET /v1/models: the models this key may use, in OpenAI's list shape. */
export const modelRoutes = (deps: AppDeps) =>
  new Elysia({ prefix: "/v1", tags: ["models"] })
    .use(requireKey(deps))
    .get("/models", ({ principal }) => ({ object: "list" as const, data: deps.registry.list().filter((m) => keyMayUse(m, principal)).map((m) => view(m, deps.billing.plans.get(principal.planId))) }), {
      detail: { summary: "List the models this API key may use", security: [{ bearer: [] }] },
      response: { 200: t.Object({ object: t.Literal("list"), data: t.Array(Model) }), ...authErrors },
    })
    .get(
      "/models/:model",
      ({ principal, params }) => {
        const m = deps.registry.get(params.model);
        if (!m || !keyMayUse(m, principal)) throw modelNotFound(params.model);
        return view(m, deps.billing.plans.get(principal.planId));
      },
      {
        params: t.Object({ model: t.String() }),
        detail: { summary: "Retrieve one model", security: [{ bearer: [] }] },
        response: { 200: Model, 404: ErrorEnvelope, ...authErrors },
      },
    );
