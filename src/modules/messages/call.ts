/** What the Messages controller hands its services: plain values, no Elysia context. */
import type { Principal } from "../../auth/authenticate-key.ts";
import type { RequestFacts, RequestTrace } from "../../ops/hooks.ts";
import type { CountTokensRequest, MessagesRequest } from "./model.ts";

export const ROUTE = "/v1/messages";
/** names the tools a request offered that reelay left out (Anthropic's own tools): `web_search, code_execution` */
export const OMITTED_TOOLS_HEADER = "x-reelay-omitted-tools";

export interface MessagesCall<B = MessagesRequest> {
  principal: Principal;
  body: B & Record<string, unknown>;
  requestId: string;
  signal: AbortSignal;
  startedAt: number;
  note(facts: RequestFacts): void;
  /** the request's trace (deps.tracing.of; undefined when tracing is off) */
  trace?: RequestTrace;
  /** the client's `anthropic-version` header, passed on to a model that speaks Messages natively */
  anthropicVersion?: string;
  /** the client's `anthropic-beta` header, split at commas */
  anthropicBeta?: string[];
}

export type CountTokensCall = MessagesCall<CountTokensRequest & { max_tokens?: number }>;

/** Tool names as a header value: printable ASCII only, bounded. */
export function headerList(names: string[]): string {
  return names.map((n) => n.replace(/[^\x21-\x7e]/g, "?").slice(0, 64)).join(", ").slice(0, 1024);
}
