/**
 * POST /v1/plugin-hooks/{model}/{token}: the one inbound route for video backends that call back
 * (Replicate's prediction webhooks, and any plugin's `video.webhook`). It carries no API key — the
 * backend cannot have one — so the plugin verifies each request itself (a signature over the raw
 * body) and answers whether it was genuine; only then are the jobs it names polled at once (on
 * whichever instance runs them). The core never reads the body: the plugin owns its wire format.
 *
 * The body is read up to REELAY_MAX_BODY_BYTES (a Replicate prediction echoes its input, which may
 * hold the source image as a data URL); larger is a 413 before the plugin sees it.
 */
import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { ApiError, notFound, quoted, tooLarge } from "../../errors.ts";
import { clientErrorFrom } from "../../http/plugin-errors.ts";
import { ErrorEnvelope } from "../../http/schemas.ts";
import { readBodyCapped } from "../../plugin-sdk/index.ts";

const Params = t.Object({
  model: t.String({ maxLength: 128, error: "'model' must be a model id." }),
  token: t.String({ pattern: "^[A-Za-z0-9_.:-]{1,128}$", error: "'token' must be the hook token the model's plugin gave its backend." }),
});
const Received = t.Object({ received: t.Literal(true), woken: t.Integer({ description: "jobs polled now because of this hook" }) });

export const pluginHookRoutes = (deps: AppDeps) =>
  new Elysia({ prefix: "/v1", tags: ["plugin hooks"] }).post(
    "/plugin-hooks/:model/:token",
    async ({ params, request, set }) => {
      const model = deps.registry.get(params.model);
      const hook = model?.instance.video?.webhook;
      if (!model || !hook) throw notFound(`No model '${quoted(params.model)}' takes hooks.`, "hook_not_found", "model");
      const body = await readBodyCapped(request, deps.config.maxBodyBytes, () => tooLarge(`Hook body exceeds the limit of ${deps.config.maxBodyBytes} bytes.`));
      const headers: Record<string, string> = {};
      request.headers.forEach((value, name) => void (headers[name] = value));
      let result: { accepted: boolean; wake: string[] };
      try {
        result = await hook.call(model.instance.video, { token: params.token, headers, body }, { signal: request.signal, requestId: String(set.headers["x-request-id"] ?? "") });
      } catch (err) {
        throw clientErrorFrom(err);
      }
      if (!result.accepted) throw new ApiError(401, "authentication_error", "The hook was not accepted: its signature or token does not verify. It was ignored.", { code: "invalid_hook_signature" });
      for (const handle of result.wake) deps.registry.wakeups.wake(model.id, handle);
      deps.requestLog.note(request, { model: model.id });
      return { received: true as const, woken: result.wake.length };
    },
    {
      params: Params,
      parse: "none",
      detail: {
        summary: "Callback from a video backend",
        description:
          "Where a video backend calls back (e.g. Replicate's prediction webhooks), at the URL the model's plugin gave it. No API key: the plugin verifies the request (e.g. a Standard Webhooks signature over the raw body); a request it does not accept is a 401 and changes nothing. An accepted hook makes reelay poll the jobs it names at once. Body at most REELAY_MAX_BODY_BYTES.",
      },
      response: { 200: Received, 401: ErrorEnvelope, 404: ErrorEnvelope, 413: ErrorEnvelope, 502: ErrorEnvelope },
    },
  );
