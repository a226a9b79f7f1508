import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import type { BackgroundTask } from "../../background.ts";

/** POST/GET /v1/videos/generations (issue 6). */
export const videoRoutes = (deps: AppDeps) => new Elysia({ prefix: "/v1", tags: ["videos"] });

/** The video scheduler and retention sweeper, started by boot. */
export const videoBackgroundTasks = (deps: AppDeps): BackgroundTask[] => [];
