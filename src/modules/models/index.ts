import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { modelNotFound } from "../../errors.ts";
import { authErrors, ErrorEnvelope } from "../../http/schemas.ts";
import { requireKey } from "../../http/require-key.ts";
import { keyMayUse, type RegisteredModel } from "../../registry/model-registry.ts";

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
        input_per_million: t.Optional(t.Integer({ description: "per million input tokens" })),
        output_per_million: t.Optional(t.Integer({ description: "per million output tokens" })),
        cached_input_per_million: t.Optional(t.Integer({ description: "per million input tokens read from the upstream's prompt cache (absent: the input price)" })),
        cache_write_per_million: t.Optional(t.Integer({ description: "per million input tokens written to the upstream's prompt cache (absent: the input price)" })),
        per_second: t.Optional(t.Integer({ description: "per second of video" })),
      },
      { description: "What a request costs, in micro-dollars (1 USD = 1,000,000); only the prices the model has (reelay extension)." },
    ),
  },
  { examples: [{ id: "use-lite", object: "model", created: 1763760000, owned_by: "reelay", capabilities: ["embeddings"], pricing: { input_per_million: 20_000 } }] },
);

const PRICE_FIELDS = [
  ["inputPerMillion", "input_per_million"], ["outputPerMillion", "output_per_million"], ["cachedInputPerMillion", "cached_input_per_million"],
  ["cacheWritePerMillion", "cache_write_per_million"], ["perSecond", "per_second"],
] as const;

const view = (m: RegisteredModel) => ({
  id: m.id, object: "model" as const, created: m.createdAt, owned_by: m.ownedBy, capabilities: m.capabilities, ...(m.description ? { description: m.description } : {}),
  pricing: Object.fromEntries(PRICE_FIELDS.filter(([k]) => m.pricing[k] !== undefined).map(([k, field]) => [field, m.pricing[k]])),
});

/** GET /v1/models: the models this key may use, in OpenAI's list shape. */
export const modelRoutes = (deps: AppDeps) =>
  new Elysia({ prefix: "/v1", tags: ["models"] })
    .use(requireKey(deps))
    .get("/models", ({ principal }) => ({ object: "list" as const, data: deps.registry.list().filter((m) => keyMayUse(m, principal)).map(view) }), {
      detail: { summary: "List the models this API key may use", security: [{ bearer: [] }] },
      response: { 200: t.Object({ object: t.Literal("list"), data: t.Array(Model) }), ...authErrors },
    })
    .get(
      "/models/:model",
      ({ principal, params }) => {
        const m = deps.registry.get(params.model);
        if (!m || !keyMayUse(m, principal)) throw modelNotFound(params.model);
        return view(m);
      },
      {
        params: t.Object({ model: t.String() }),
        detail: { summary: "Retrieve one model", security: [{ bearer: [] }] },
        response: { 200: Model, 404: ErrorEnvelope, ...authErrors },
      },
    );
