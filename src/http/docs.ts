/**
 * OpenAPI document at /docs/json and the Scalar docs UI at /docs (and /docs/). The UI's script is
 * served by reelay itself from the embedded @scalar/api-reference bundle and every feature of the
 * UI that calls the internet is off (Ask AI, "Deploy on Scalar", the request proxy, telemetry, web
 * fonts), so the docs are fully useful offline. `GET /` points to the docs.
 */
import { openapi } from "@elysiajs/openapi";
import { Elysia } from "elysia";
// @ts-ignore: file import, embedded by `bun build --compile`
import scalarBundle from "../../node_modules/@scalar/api-reference/dist/browser/standalone.js" with { type: "file" };
import { tidyOpenApi, type RouteBody } from "./openapi-tidy.ts";

export const DOCS_ASSET_PATH = "/docs/assets/scalar.js";
const SPEC_PATH = "/docs/json";

/** Scalar options; see @scalar/types api-reference-configuration */
const SCALAR = {
  cdn: DOCS_ASSET_PATH,
  // absolute: the relative "docs/json" the plugin sets resolves to /docs/docs/json from /docs/
  url: SPEC_PATH,
  withDefaultFonts: false, // fonts.scalar.com
  agent: { disabled: true }, // "Ask AI" (on by default on localhost)
  showDeveloperTools: "never", // the toolbar with "Deploy on Scalar" (default: on localhost)
  hideClientButton: true, // the API client and its "send through proxy.scalar.com" option
  hideTestRequestButton: true,
  telemetry: false,
  // the client's API key is the scheme most routes take: selected, not "No authentication"
  authentication: { preferredSecurityScheme: "bearer" },
};

/** `webhooks`: the OpenAPI 3.1 `webhooks` object (the events reelay POSTs; modules/webhooks/model.ts) */
export const docs = (opts: { webhooks: Record<string, unknown> }) => {
  const tidied = new WeakMap<object, Record<string, unknown>>(); // keyed by the plugin's cached document
  const instance: Elysia = new Elysia()
    .get("/", ({ request }) =>
      (request.headers.get("accept") ?? "").includes("text/html")
        ? Response.redirect("/docs", 302)
        : { object: "reelay", docs: "/docs", openapi: SPEC_PATH, models: "/v1/models", health: "/healthz" },
    { detail: { hide: true } })
    .get(DOCS_ASSET_PATH, () => new Response(Bun.file(scalarBundle as unknown as string), { headers: { "content-type": "text/javascript; charset=utf-8", "cache-control": "public, max-age=86400" } }), { detail: { hide: true } })
    .onAfterHandle(({ path, response }) => {
      if (path !== SPEC_PATH || typeof response !== "object" || response === null) return;
      let doc = tidied.get(response);
      if (!doc) tidied.set(response, (doc = tidyOpenApi(response as Record<string, unknown>, allRoutes(instance))));
      return doc;
    })
    .use(
      openapi({
        path: "/docs",
        specPath: SPEC_PATH,
        exclude: { paths: [DOCS_ASSET_PATH, "/"] },
        scalar: SCALAR as never,
        documentation: {
          info: {
            title: "reelay API",
            version: "0.1.0",
            description:
              "Image-to-video jobs, OpenAI-compatible chat completions and embeddings, and Anthropic's Messages API, billed in credits (integer micro-dollars). " +
              "Authenticate with `Authorization: Bearer <API key>` (the Messages routes and GET /v1/models also take `x-api-key: <API key>`); admin routes take `Authorization: Bearer <REELAY_ADMIN_TOKEN>` (the bootstrap identity) or an operator's personal token (`ro-…`), and each needs a role (admin, billing, support, viewer; 403 `insufficient_role` names the one needed). " +
              "Every error is `{\"error\": {\"message\", \"type\", \"param\", \"code\"}}`, except on the Messages routes, which answer in Anthropic's envelope `{\"type\": \"error\", \"error\": {\"type\", \"message\"}}`.",
          },
          // OpenAPI 3.1 `webhooks`: the signed events reelay POSTs (the TypeBox schemas are JSON Schema already)
          webhooks: opts.webhooks as never,
          components: {
            securitySchemes: {
              bearer: { type: "http", scheme: "bearer", description: "a client API key (rl-…)" },
              apiKey: { type: "apiKey", in: "header", name: "x-api-key", description: "a client API key (rl-…), Anthropic's way: the Messages routes and GET /v1/models take it" },
              admin: { type: "http", scheme: "bearer", description: "REELAY_ADMIN_TOKEN (the bootstrap identity, role admin) or an operator's personal token (ro-…); the console also signs operators in with OpenID Connect" },
            },
          },
        },
      }),
    ) as never;
  return instance;
};

/** every route of the app this instance is part of (what the OpenAPI plugin itself reads) */
const allRoutes = (app: Elysia) => (app as unknown as { getGlobalRoutes(): RouteBody[] }).getGlobalRoutes();
