/**
 * A plugin's native Messages API (MessagesCapability) as a route calls it, checked like chat:
 * create()'s result (an Anthropic message object), every stream event as it passes (named, JSON,
 * its `type` its name; secrets the plugin read redacted), countTokens()'s count, thrown values
 * branded. Usage is judged where it is billed, as chat's upstreamUsage is (credibleCount at
 * settlement): `reportedMessagesUsage` and `MessagesStreamUsage` read Anthropic's numbers for it.
 */
import {
  chatUsageOfMessages, problemWithMessagesEvent, problemWithMessagesResult, problemWithTokenCount,
  type MessagesCapability, type MessagesStreamEvent,
} from "../plugin-sdk/index.ts";
import { fromPluginThrow, guarded, violation, type PluginSite } from "./plugin-faults.ts";
import type { PluginCalls } from "./plugin-calls.ts";
import type { HostMessages, HostMessagesCall } from "./types.ts";

export function checkedMessages(cap: MessagesCapability, site: PluginSite, calls: PluginCalls): HostMessages {
  const checked: HostMessages = {
    async create(body, call) {
      const result = await guarded(site, call.signal, call.requestId, () => cap.create(body, calls.options(call)));
      const problem = problemWithMessagesResult(result);
      if (problem) throw violation(site, problem, call.requestId);
      return result;
    },
  };
  if (typeof cap.stream === "function") {
    checked.stream = async (body, call) => {
      const events = await guarded(site, call.signal, call.requestId, () => cap.stream!(body, calls.options(call)));
      if (typeof (events as AsyncIterable<unknown> | null)?.[Symbol.asyncIterator] !== "function") {
        throw violation(site, "messages.stream() did not resolve to an async iterable of events", call.requestId);
      }
      return checkedEvents(events, site, call);
    };
  }
  if (typeof cap.countTokens === "function") {
    checked.countTokens = async (body, call) => {
      const result = await guarded(site, call.signal, call.requestId, () => cap.countTokens!(body, calls.options(call)));
      const problem = problemWithTokenCount(result);
      if (problem) throw violation(site, problem, call.requestId);
      return result;
    };
  }
  return checked;
}

/** Each event checked before the route sees it (a plain iterator, as chat's: one fewer promise per event). */
function checkedEvents(events: AsyncIterable<MessagesStreamEvent>, site: PluginSite, call: HostMessagesCall): AsyncIterable<MessagesStreamEvent> {
  const it = events[Symbol.asyncIterator]();
  const iterator: AsyncIterator<MessagesStreamEvent> = {
    async next() {
      let r: IteratorResult<MessagesStreamEvent>;
      try {
        r = await it.next();
      } catch (err) {
        throw fromPluginThrow(site, err, call.signal, call.requestId);
      }
      if (!r.done) {
        const problem = problemWithMessagesEvent(r.value);
        if (problem) {
          it.return?.().catch(() => {});
          throw violation(site, problem, call.requestId);
        }
        if (site.secrets?.size) {
          const data = site.secrets.redact(r.value.data);
          if (data !== r.value.data) return { done: false, value: { event: r.value.event, data, json: JSON.parse(data) } };
        }
      }
      return r;
    },
    async return(value?: unknown) {
      await it.return?.(value).catch(() => {});
      return { done: true, value: undefined };
    },
  };
  return { [Symbol.asyncIterator]: () => iterator };
}

/** An upstream's usage numbers, each as received (undefined: not reported); the shape close-request.ts bills. */
export interface MessagesReportedUsage {
  /** every prompt token: input + cache reads + cache writes */
  prompt: unknown;
  completion: unknown;
  cached: unknown;
  cacheWrite: unknown;
}

/** Anthropic's usage object (a message's, or a MessagesResult's upstreamUsage) as numbers to judge and bill. */
export function reportedMessagesUsage(u: unknown): MessagesReportedUsage {
  if (typeof u !== "object" || u === null) return { prompt: undefined, completion: undefined, cached: undefined, cacheWrite: undefined };
  const c = chatUsageOfMessages(u);
  return { prompt: c.prompt_tokens, completion: c.completion_tokens, cached: c.prompt_tokens_details.cached_tokens, cacheWrite: c.prompt_tokens_details.cache_write_tokens };
}

/**
 * The usage of a Messages stream as its events pass: `message_start` carries the prompt's counts
 * (and an early output count), each `message_delta` the cumulative output (and, from newer
 * upstreams, cumulative input and cache counts); a later non-null value replaces an earlier one.
 */
export class MessagesStreamUsage {
  private usage: Record<string, unknown> | null = null;

  observe(json: MessagesStreamEvent["json"]): void {
    const u = json.type === "message_start" ? (json.message as { usage?: unknown } | undefined)?.usage : json.type === "message_delta" ? json.usage : undefined;
    if (typeof u !== "object" || u === null) return;
    this.usage ??= {};
    for (const [k, v] of Object.entries(u)) if (v !== null && v !== undefined) this.usage[k] = v;
  }

  /** null until a message_start or message_delta carried usage */
  reported(): MessagesReportedUsage | null {
    return this.usage ? reportedMessagesUsage(this.usage) : null;
  }
}
