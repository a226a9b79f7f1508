import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";

/** POST /v1/embeddings (issue 5). */
export const embeddingsRoutes = (deps: AppDeps) => new Elysia({ prefix: "/v1", tags: ["embeddings"] });
