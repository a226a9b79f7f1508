/**
 * OpenAPI document at /docs/json and the Scalar docs UI at /docs. The UI's script is served by
 * reelay itself from the embedded @scalar/api-reference bundle, so the docs render offline.
 */
import { openapi } from "@elysiajs/openapi";
import { Elysia } from "elysia";
import { WEBHOOKS_OPENAPI } from "../modules/webhooks/model.ts";
// @ts-ignore: file import, embedded by `bun build --compile`
import scalarBundle from "../../node_modules/@scalar/api-reference/dist/browser/standalone.js" with { type: "file" };

export const DOCS_ASSET_PATH = "/docs/assets/scalar.js";

export const docs = () =>
  new Elysia()
    .get(DOCS_ASSET_PATH, () => new Response(Bun.file(scalarBundle as unknown as string), { headers: { "content-type": "text/javascript; charset=utf-8", "cache-control": "public, max-age=86400" } }), { detail: { hide: true } })
    .use(
      openapi({
        path: "/docs",
        specPath: "/docs/json",
        exclude: { paths: [DOCS_ASSET_PATH] },
        scalar: { cdn: DOCS_ASSET_PATH, withDefaultFonts: false, hideClientButton: true } as never,
        documentation: {
          info: {
            title: "reelay API",
            version: "0.1.0",
            description:
              "Image-to-video jobs, OpenAI-compatible chat completions and embeddings, billed in credits (integer micro-dollars). " +
              "Authenticate with `Authorization: Bearer <API key>`; admin routes take `Authorization: Bearer <REELAY_ADMIN_TOKEN>`. " +
              "Every error is `{\"error\": {\"message\", \"type\", \"param\", \"code\"}}`.",
          },
          // OpenAPI 3.1 `webhooks`: the signed events reelay POSTs (the TypeBox schemas are JSON Schema already)
          webhooks: WEBHOOKS_OPENAPI as never,
          components: {
            securitySchemes: {
              bearer: { type: "http", scheme: "bearer", description: "a client API key (rl-…)" },
              admin: { type: "http", scheme: "bearer", description: "the operator's REELAY_ADMIN_TOKEN" },
            },
          },
        },
      }),
    );
