/** Ollama's /api/chat answers → OpenAI chat objects (built with the SDK's chunk builders). */
import { chatChunks, PluginError, type ChatFinishReason, type ChatFunctionToolCall, type TokenUsage } from "@reelay/plugin-sdk";

/** One line of /api/chat (the whole answer when not streamed). */
export interface OllamaChatLine {
  model?: string;
  message?: { role?: string; content?: string; thinking?: string; tool_calls?: Array<{ function?: { name?: string; arguments?: unknown } }> };
  done?: boolean;
  done_reason?: string;
  prompt_eval_count?: number;
  eval_count?: number;
  error?: string;
}

/** An `{"error": …}` line, or a line that is not an answer, as the PluginError it means. */
export function lineProblem(line: OllamaChatLine, midStream: boolean): PluginError | null {
  if (typeof line !== "object" || line === null) return new PluginError("malformed", "Ollama sent a line that is not an object");
  if (typeof line.error === "string") return midStream ? new PluginError("stream_interrupted", `Ollama: ${line.error}`) : new PluginError("failed", `Ollama: ${line.error}`, { code: "ollama_error" });
  if (!line.done && typeof line.message?.content !== "string") return new PluginError("malformed", "Ollama sent a line without message.content");
  return null;
}

export function toolCalls(line: OllamaChatLine): ChatFunctionToolCall[] {
  return (line.message?.tool_calls ?? []).map((c, n) => ({
    id: `call_${n}_${crypto.randomUUID().slice(0, 8)}`,
    type: "function" as const,
    function: { name: String(c.function?.name ?? ""), arguments: JSON.stringify(c.function?.arguments ?? {}) },
  }));
}

export function finishReason(line: OllamaChatLine, calls: number): ChatFinishReason {
  if (calls > 0) return "tool_calls";
  return line.done_reason === "length" ? "length" : "stop";
}

/** Ollama's own token counts; none when it left one out (a cached prompt is reported without prompt_eval_count): reelay then counts. */
export function usageOf(line: OllamaChatLine): TokenUsage | undefined {
  const p = line.prompt_eval_count, c = line.eval_count;
  return Number.isSafeInteger(p) && Number.isSafeInteger(c) && p! >= 0 && c! >= 0 ? { prompt_tokens: p!, completion_tokens: c! } : undefined;
}

export function completionOf(line: OllamaChatLine, model: string) {
  const calls = toolCalls(line);
  const out = chatChunks({ model });
  return out.completion({ content: line.message?.content ?? "", ...(calls.length ? { tool_calls: calls } : {}) }, finishReason(line, calls.length), usageOf(line));
}
