import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";

/** POST /v1/chat/completions (issue 4). */
export const chatRoutes = (deps: AppDeps) => new Elysia({ prefix: "/v1", tags: ["chat"] });
