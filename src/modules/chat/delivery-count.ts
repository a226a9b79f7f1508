/**
 * What one streamed response has delivered, and what the upstream reported. Only events actually
 * handed to the client count: a client that disconnects is billed on these numbers. The upstream's
 * numbers are kept as received (anything at all); close-request.ts decides whether they are credible.
 */
import { countTextTokens } from "../../text/tokens.ts";
import { reportedUsage, type ReportedUsage } from "./close-request.ts";

export class DeliveryCount {
  private text = "";
  private counted: number | null = null;
  /** completion_tokens of the last delivered chunk that carried running usage (vLLM continuous_usage_stats), as received */
  running: unknown = undefined;
  /** the upstream's last reported usage, delivered to the client or not, as received */
  reported: ReportedUsage | null = null;
  events = 0;

  /** note the usage an upstream event reports (called for every event, even ones not relayed) */
  observe(json: any): void {
    const u = json?.usage;
    if (u && typeof u === "object" && (u.prompt_tokens !== undefined || u.completion_tokens !== undefined)) this.reported = reportedUsage(u);
  }

  /** an event was written to the client */
  delivered(json: any): void {
    this.events++;
    const choices = Array.isArray(json?.choices) ? json.choices : [];
    for (const c of choices) {
      const d = c?.delta;
      if (typeof d?.content === "string") this.text += d.content;
      if (typeof d?.reasoning_content === "string") this.text += d.reasoning_content;
      else if (typeof d?.reasoning === "string") this.text += d.reasoning; // the newer name (vLLM ≥ 0.10, Ollama, OpenRouter)
      for (const tc of Array.isArray(d?.tool_calls) ? d.tool_calls : []) if (typeof tc?.function?.arguments === "string") this.text += tc.function.arguments;
    }
    const u = json?.usage;
    if (choices.length > 0 && u && typeof u === "object" && u.completion_tokens !== undefined) this.running = u.completion_tokens;
    this.counted = null;
  }

  /** completion tokens delivered, by reelay's tokenizer */
  localTokens(): number {
    return (this.counted ??= countTextTokens(this.text));
  }
}
