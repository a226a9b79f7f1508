import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { modelNotFound } from "../../errors.ts";
import { authErrors, ErrorEnvelope } from "../../http/schemas.ts";
import { requireKey } from "../../http/require-key.ts";
import { keyMayUse, type RegisteredModel } from "../../registry/model-registry.ts";
import { applyPlan, effectiveRate, effectiveSizeRates, type PricePlan } from "../../billing/index.ts";

const Model = t.Object(
  {
    id: t.String(),
    object: t.Literal("model"),
    created: t.Integer(),
    owned_by: t.String(),
    capabilities: t.Array(t.Union([t.Literal("chat"), t.Literal("embeddings"), t.Literal("video")]), {
      description: "What the model serves (an extension to OpenAI's model object): chat → POST /v1/chat/completions, embeddings → POST /v1/embeddings, video → POST /v1/videos or POST /v1/videos/generations.",
    }),
    description: t.Optional(t.String({ description: "what the model does, when its plugin or the models file says (reelay extension)" })),
    pricing: t.Optional(t.Object({
      input_per_million: t.Optional(t.Number()),
      output_per_million: t.Optional(t.Number()),
      cached_input_per_million: t.Optional(t.Number({ description: "per million input tokens read from the upstream's prompt cache (absent: the input price)" })),
      cache_write_per_million: t.Optional(t.Number({ description: "per million input tokens written to the upstream's prompt cache (absent: the input price)" })),
      per_second: t.Optional(t.Number()),
      per_second_by_size: t.Optional(t.Record(t.String(), t.Number())),
      plan: t.Optional(t.String({ description: "the price plan of the key's account these prices come from (absent: list prices); a plan's adjusted rates may have a fraction of a micro-dollar, a request's cost is computed exactly and rounded up once" })),
    }, { description: "the model's prices as the key's account pays them, in micro-dollars (1 USD = 1,000,000): per million input / output tokens (cached and cache-write input tokens at their own prices when set), per second of video, per second of video at a size (over per_second for that size) (reelay extension)" })),
    video: t.Optional(t.Object({
      sizes: t.Array(t.String()),
      seconds: t.Array(t.Integer()),
      remix: t.Boolean(),
    }, { description: "video models: the sizes and clip lengths (whole seconds) it renders, and whether POST /v1/videos/{id}/remix works (reelay extension)" })),
  },
  { examples: [{ id: "use-lite", object: "model", created: 1763760000, owned_by: "reelay", capabilities: ["embeddings"] }] },
);

/** Anthropic's model object: what the Anthropic SDK's models.list() and Claude Code read */
const AnthropicModel = t.Object(
  { type: t.Literal("model"), id: t.String(), display_name: t.String(), created_at: t.String({ description: "RFC 3339" }) },
  { examples: [{ type: "model", id: "llama-3-8b", display_name: "llama-3-8b", created_at: "2026-01-01T00:00:00Z" }] },
);
const AnthropicList = t.Object({ data: t.Array(AnthropicModel), has_more: t.Boolean(), first_id: t.Nullable(t.String()), last_id: t.Nullable(t.String()) });

const anthropicView = (m: RegisteredModel) => ({
  type: "model" as const, id: m.id, display_name: m.id, created_at: new Date(m.createdAt * 1000).toISOString().replace(/\.\d{3}Z$/, "Z"),
});
/** The client speaks Anthropic's API: its SDKs and Claude Code always send anthropic-version. */
const anthropic = (request: Request) => request.headers.has("anthropic-version");

const view = (m: RegisteredModel, plan: PricePlan | null) => ({
  id: m.id, object: "model" as const, created: m.createdAt, owned_by: m.ownedBy, capabilities: m.capabilities, ...(m.description ? { description: m.description } : {}),
  pricing: pricingView(m, plan),
  ...(m.video ? { video: { sizes: [...m.video.sizes], seconds: [...m.video.seconds], remix: m.video.remix } } : {}),
});

/** The prices the key's account pays: its price plan applied (src/billing/plans.ts). */
function pricingView(m: RegisteredModel, plan: PricePlan | null) {
  const p = applyPlan(plan, m.id, m.pricing);
  const bySize = effectiveSizeRates(p);
  return {
    ...(p.inputPerMillion !== undefined ? { input_per_million: effectiveRate(p, "inputPerMillion")! } : {}),
    ...(p.outputPerMillion !== undefined ? { output_per_million: effectiveRate(p, "outputPerMillion")! } : {}),
    ...(p.cachedInputPerMillion !== undefined ? { cached_input_per_million: effectiveRate(p, "cachedInputPerMillion")! } : {}),
    ...(p.cacheWritePerMillion !== undefined ? { cache_write_per_million: effectiveRate(p, "cacheWritePerMillion")! } : {}),
    ...(p.perSecond !== undefined ? { per_second: effectiveRate(p, "perSecond")! } : {}),
    ...(bySize ? { per_second_by_size: bySize } : {}),
    ...(p.plan ? { plan: p.plan } : {}),
  };
}

const ANTHROPIC_SHAPE = "With an `anthropic-version` header (Anthropic's SDKs, Claude Code) the answer is in Anthropic's shape instead, and so are errors; such clients may authenticate with `x-api-key`. ";

/** GET /v1/models: the models this key may use, in OpenAI's list shape (Anthropic's for Anthropic clients). Ids only: aliases resolve, they are not listed. */
export const modelRoutes = (deps: AppDeps) =>
  new Elysia({ prefix: "/v1", tags: ["models"] })
    .use(requireKey(deps, { xApiKey: true }))
    .get(
      "/models",
      ({ principal, request }) => {
        const models = deps.registry.list().filter((m) => keyMayUse(m, principal));
        const plan = deps.billing.plans.get(principal.planId);
        if (!anthropic(request)) return { object: "list" as const, data: models.map((m) => view(m, plan)) };
        return { data: models.map(anthropicView), has_more: false, first_id: models[0]?.id ?? null, last_id: models.at(-1)?.id ?? null };
      },
      {
        detail: {
          summary: "List the models this API key may use",
          description: `Every model the key may use, by id (a model's aliases are accepted wherever a model is named, and not listed). ${ANTHROPIC_SHAPE}(\`{data: [{type: "model", id, display_name, created_at}], has_more, first_id, last_id}\`)`,
          security: [{ bearer: [] }, { apiKey: [] }],
        },
        response: { 200: t.Union([t.Object({ object: t.Literal("list"), data: t.Array(Model) }), AnthropicList]), ...authErrors },
      },
    )
    .get(
      "/models/:model",
      ({ principal, params, request }) => {
        const m = deps.registry.get(params.model);
        if (!m || !keyMayUse(m, principal)) throw modelNotFound(params.model);
        return anthropic(request) ? anthropicView(m) : view(m, deps.billing.plans.get(principal.planId));
      },
      {
        params: t.Object({ model: t.String() }),
        detail: { summary: "Retrieve one model", description: `A model by its id or one of its aliases (answered with its id). ${ANTHROPIC_SHAPE}`, security: [{ bearer: [] }, { apiKey: [] }] },
        response: { 200: t.Union([Model, AnthropicModel]), 404: ErrorEnvelope, ...authErrors },
      },
    );
