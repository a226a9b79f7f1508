/**
 * Failure scenarios a plugin's test gives the contract runner, and the expectations it checks for
 * each: the thrown value must be a PluginError (branded), whose kind gives the API client the
 * status failure.ts documents and the video scheduler the right retry decision.
 */
import { expect } from "bun:test";
import { describeFailure } from "../failure.ts";
import { isPluginError, readPluginError, type PluginErrorKind } from "../errors.ts";
import { show } from "../checks.ts";

export interface FailureScenarios {
  /** make your upstream answer HTTP `status` (with an error body) until `reset` */
  httpStatus?(status: number): void | Promise<void>;
  /** make your upstream unreachable (connection refused) until `reset` */
  unreachable?(): void | Promise<void>;
  /** make your upstream accept requests and never answer until `reset`; used with `shortTimeouts` */
  hang?(): void | Promise<void>;
  /** options that make the plugin give up within a few seconds (merged over the model's options) */
  shortTimeouts?: Record<string, unknown>;
  /** make your upstream answer something that is not its protocol until `reset` */
  garbage?(): void | Promise<void>;
  /** make streamed answers slow (≥ 100 ms between events), until `reset`: with sawAbort, checks the abort reaches the upstream */
  slowStream?(): void | Promise<void>;
  /** make streamed answers break (a connection reset) after a few events, until `reset` */
  breakMidStream?(): void | Promise<void>;
  /** video: make jobs fail for good at the provider (e.g. a content policy refusal), until `reset` */
  jobFails?(): void | Promise<void>;
  /** back to normal */
  reset(): void | Promise<void>;
  /** did the upstream see its last request end early (the client went away)? */
  sawAbort?(): boolean | Promise<boolean>;
}

export interface Expected {
  /** the status reelay answers the API client with */
  status: number;
  /** does the video scheduler (and later a router) try again */
  retryable: boolean;
  /** the kind, when only one is right */
  kind?: PluginErrorKind;
}

/** upstream status → what the client must get; 400 may also be the plugin's own invalid_request */
export const HTTP_EXPECTATIONS: Array<[number, Expected]> = [
  [400, { status: 400, retryable: false }],
  [401, { status: 502, retryable: false }],
  [403, { status: 502, retryable: false }],
  [404, { status: 404, retryable: false }],
  [429, { status: 429, retryable: true }],
  [500, { status: 502, retryable: true }],
  [503, { status: 502, retryable: true }],
];

/** The value `run` rejects with; fails the test if it resolves. */
export async function thrownBy(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (err) {
    return err;
  }
  throw new Error("expected the call to fail, but it succeeded");
}

/** Checks a thrown value against what the client and the scheduler must see. */
export function expectFailure(err: unknown, want: Expected, what: string): void {
  if (!isPluginError(err)) {
    throw new Error(`${what}: threw ${err instanceof Error ? `${err.name}: ${err.message}` : show(err)}, not a PluginError; reelay would answer 502 plugin_failed instead of ${want.status}`);
  }
  const f = describeFailure(err);
  const got = { what, status: f.status, retryable: f.retryable, ...(want.kind ? { kind: readPluginError(err)!.kind } : {}) };
  expect(got).toEqual({ what, ...want });
}

export async function withScenario<T>(failures: FailureScenarios, start: () => void | Promise<void>, run: () => Promise<T>): Promise<T> {
  await start();
  try {
    return await run();
  } finally {
    await failures.reset();
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
