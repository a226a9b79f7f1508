export * from "./accounts.ts";
export * from "./keys.ts";
export * from "./credits.ts";
export * from "./usage.ts";
export * from "./video-jobs.ts";
export * from "./usage-rollups.ts";
export * from "./webhooks.ts";
export * from "./responses.ts";
