/**
 * A plugin's embeddings capability as the route calls it: embed()'s result checked (one vector per
 * input, usage integers ≥ 0 within the allowance), countTokens()'s answer checked (the counts become
 * holds and bills), thrown values branded.
 */
import { problemWithEmbeddings, show, type EmbeddingsCapability } from "../plugin-sdk/index.ts";
import { guarded, violation, type PluginSite } from "./plugin-faults.ts";
import type { PluginCalls } from "./plugin-calls.ts";
import type { HostEmbeddings } from "./types.ts";

export function checkedEmbeddings(cap: EmbeddingsCapability, site: PluginSite, calls: PluginCalls): HostEmbeddings {
  const checked: HostEmbeddings = Object.create(cap);
  checked.embed = async (req, call) => {
    const result = await guarded(site, call.signal, call.requestId, () => cap.embed(req, calls.options(call)));
    const problem = problemWithEmbeddings(result, req.inputs.length, call.allowed);
    if (problem) throw violation(site, problem, call.requestId);
    return result;
  };
  if (typeof cap.countTokens === "function") {
    const count = cap.countTokens.bind(cap);
    checked.countTokens = async (inputs) => {
      const never = new AbortController().signal;
      const counts = await guarded(site, never, undefined, async () => count(inputs));
      const bad = !Array.isArray(counts) || counts.length !== inputs.length ? `countTokens() returned ${show(counts)} for ${inputs.length} inputs`
        : counts.findIndex((n) => !Number.isSafeInteger(n) || n < 0) >= 0 ? `countTokens() returned ${show(counts.find((n) => !Number.isSafeInteger(n) || n < 0))}, not an integer ≥ 0` : null;
      if (bad) throw violation(site, bad);
      return counts;
    };
  }
  return checked;
}
