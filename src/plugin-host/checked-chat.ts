/**
 * A plugin's chat capability as routes call it: results checked (checks.ts) before anything is
 * billed or relayed, every stream event checked as it passes, thrown values branded
 * (plugin-faults.ts), and `stream: true` answered from complete() when the plugin has no stream().
 */
import {
  problemWithChatResult, problemWithStreamEvent,
  type ChatCapability, type ChatCompletionRequest, type ChatResult, type ChatStreamEvent,
} from "../plugin-sdk/index.ts";
import { streamFromCompletion } from "./stream-from-completion.ts";
import { fromPluginThrow, guarded, violation, type PluginSite } from "./plugin-faults.ts";
import type { HostCall, HostChat } from "./types.ts";
import type { PluginCalls } from "./plugin-calls.ts";

export function checkedChat(chat: ChatCapability, site: PluginSite, calls: PluginCalls): HostChat {
  const complete = async (body: ChatCompletionRequest, call: HostCall): Promise<ChatResult> => {
    const result = await guarded(site, call.signal, call.requestId, () => chat.complete(body, calls.options(call)));
    const problem = problemWithChatResult(result, call.allowed);
    if (problem) throw violation(site, problem, call.requestId);
    return result;
  };
  return {
    countsTokens: chat.countsTokens === true,
    complete,
    async stream(body, call) {
      if (typeof chat.stream !== "function") return streamFromCompletion(await complete(body, call), body);
      const events = await guarded(site, call.signal, call.requestId, () => chat.stream!(body, calls.options(call)));
      if (typeof (events as AsyncIterable<unknown> | null)?.[Symbol.asyncIterator] !== "function") {
        throw violation(site, "stream() did not resolve to an async iterable of events", call.requestId);
      }
      return checkedEvents(events, site, call);
    },
  };
}

/**
 * Each event checked before the relay sees it. A plain iterator object rather than an async
 * generator: one fewer promise and generator frame per event on the hottest path of a stream.
 */
function checkedEvents(events: AsyncIterable<ChatStreamEvent>, site: PluginSite, call: HostCall): AsyncIterable<ChatStreamEvent> {
  const it = events[Symbol.asyncIterator]();
  const iterator: AsyncIterator<ChatStreamEvent> = {
    async next() {
      let r: IteratorResult<ChatStreamEvent>;
      try {
        r = await it.next();
      } catch (err) {
        throw fromPluginThrow(site, err, call.signal, call.requestId);
      }
      if (!r.done) {
        const problem = problemWithStreamEvent(r.value);
        if (problem) {
          it.return?.().catch(() => {});
          throw violation(site, problem, call.requestId);
        }
        if (site.secrets?.size) {
          const data = site.secrets.redact(r.value.data);
          if (data !== r.value.data) return { done: false, value: { data, json: data === "[DONE]" ? undefined : JSON.parse(data) } };
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
