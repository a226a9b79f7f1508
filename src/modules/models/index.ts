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
      description: "What the model serves (an extension to OpenAI's model object): chat → POST /v1/chat/completions, embeddings → POST /v1/embeddings, video → POST /v1/videos or POST /v1/videos/generations.",
    }),
    description: t.Optional(t.String({ description: "what the model does, when its plugin or the models file says (reelay extension)" })),
    pricing: t.Optional(t.Object({
      input_per_million: t.Optional(t.Integer()),
      output_per_million: t.Optional(t.Integer()),
      per_second: t.Optional(t.Integer()),
      per_second_by_size: t.Optional(t.Record(t.String(), t.Integer())),
    }, { description: "the model's prices in micro-dollars (1 USD = 1,000,000): per million input / output tokens, per second of video, per second of video at a size (over per_second for that size) (reelay extension)" })),
    video: t.Optional(t.Object({
      sizes: t.Array(t.String()),
      seconds: t.Array(t.Integer()),
      remix: t.Boolean(),
    }, { description: "video models: the sizes and clip lengths (whole seconds) it renders, and whether POST /v1/videos/{id}/remix works (reelay extension)" })),
  },
  { examples: [{ id: "use-lite", object: "model", created: 1763760000, owned_by: "reelay", capabilities: ["embeddings"] }] },
);

const view = (m: RegisteredModel) => ({
  id: m.id, object: "model" as const, created: m.createdAt, owned_by: m.ownedBy, capabilities: m.capabilities, ...(m.description ? { description: m.description } : {}),
  pricing: pricingView(m),
  ...(m.video ? { video: { sizes: [...m.video.sizes], seconds: [...m.video.seconds], remix: m.video.remix } } : {}),
});

function pricingView({ pricing: p }: RegisteredModel) {
  return {
    ...(p.inputPerMillion !== undefined ? { input_per_million: p.inputPerMillion } : {}),
    ...(p.outputPerMillion !== undefined ? { output_per_million: p.outputPerMillion } : {}),
    ...(p.perSecond !== undefined ? { per_second: p.perSecond } : {}),
    ...(p.perSecondBySize ? { per_second_by_size: { ...p.perSecondBySize } } : {}),
  };
}

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
