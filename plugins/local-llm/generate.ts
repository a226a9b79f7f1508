/**
 * One answer on one context sequence: evaluate the prompt, then sample token by token until an
 * end-of-generation token, a stop sequence, the token limit, or an abort.
 *
 * Decoding runs one token ahead of the consumer and no further: the next decode step starts just
 * before a piece of text is handed over, so llama.cpp computes token n+1 (on its own thread) while
 * token n is being delivered, and parallel answers ask for their next tokens in the same event-loop
 * turn, which lets node-llama-cpp batch them into one decode. A consumer that stops reading (or
 * disconnects) therefore stops the decoding after at most that one step; the abort signal is checked
 * before every step.
 */
import type { LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import type { Sampling } from "./chat-request.ts";
import type { Prompt } from "./prompt.ts";
import { StopText } from "./stop-text.ts";
import { TokenText } from "./token-text.ts";

export type FinishReason = "stop" | "length";

export type GenerationEvent =
  | { kind: "text"; text: string; completionTokens: number }
  | { kind: "end"; finishReason: FinishReason; completionTokens: number };

export interface GenerationStats {
  /** tokens sampled into the answer (its usage) */
  completionTokens: number;
  /** tokens llama.cpp finished decoding after the signal aborted: 0, or 1 for the step already running */
  afterAbort: number;
}

/** Penalties look at this many of the latest generated tokens (llama.cpp's default window). */
const PENALTY_WINDOW = 64;

/** `sequence` must be empty (SequencePool clears it when a request returns it). */
export async function* generate(
  model: LlamaModel,
  sequence: LlamaContextSequence,
  prompt: Prompt,
  opts: { sampling: Sampling; stop: string[]; maxTokens: number; signal: AbortSignal; stats: GenerationStats },
): AsyncGenerator<GenerationEvent> {
  const { sampling, signal, stats } = opts;
  const end = (finishReason: FinishReason): GenerationEvent => ({ kind: "end", finishReason, completionTokens: stats.completionTokens });
  if (opts.maxTokens <= 0) return yield end("length");
  let decodedAtAbort: number | null = null;
  let decoded = 0;
  const onAbort = () => (decodedAtAbort = decoded);
  signal.addEventListener("abort", onAbort, { once: true });
  const text = new TokenText(model, prompt.tokens);
  const stops = new StopText([...opts.stop, ...prompt.stopTexts]);
  const generated: Token[] = [];
  const tokens = sequence.evaluate(prompt.tokens, {
    temperature: sampling.temperature,
    topP: sampling.topP,
    topK: sampling.topK,
    minP: sampling.minP,
    seed: sampling.seed,
    repeatPenalty: sampling.penalties
      ? {
        punishTokens: () => generated.slice(-PENALTY_WINDOW),
        maxPunishTokens: PENALTY_WINDOW,
        penalty: sampling.penalties.repeat,
        frequencyPenalty: sampling.penalties.frequency,
        presencePenalty: sampling.penalties.presence,
      }
      : undefined,
    yieldEogToken: true,
  });
  const step = () => {
    const p = tokens.next().then((r) => {
      if (!r.done) decoded++;
      return r;
    });
    p.catch(() => {}); // a step left running when the answer ends is awaited in `finally`
    return p;
  };
  let pending: ReturnType<typeof step> | null = step();
  try {
    for (;;) {
      const next: IteratorResult<Token> = await pending;
      pending = null;
      signal.throwIfAborted();
      if (next.done) return yield* finish("stop");
      const token = next.value;
      stats.completionTokens++;
      generated.push(token);
      if (model.isEogToken(token) || endsWithAny(generated, prompt.stopTokens)) return yield* finish("stop");
      const piece = stops.push(text.push(token));
      if (piece.stopped) {
        if (piece.emit) yield { kind: "text", text: piece.emit, completionTokens: stats.completionTokens };
        return yield end("stop");
      }
      if (stats.completionTokens >= opts.maxTokens) {
        if (piece.emit) yield { kind: "text", text: piece.emit, completionTokens: stats.completionTokens };
        return yield* finish("length");
      }
      pending = step(); // decode the next token while this one is delivered
      if (piece.emit) yield { kind: "text", text: piece.emit, completionTokens: stats.completionTokens };
    }
  } finally {
    signal.removeEventListener("abort", onAbort);
    if (pending) await pending.catch(() => null);
    await tokens.return();
    if (decodedAtAbort !== null) stats.afterAbort = decoded - decodedAtAbort;
  }

  /** the answer ended without a stop sequence: what was held back is text */
  async function* finish(reason: FinishReason): AsyncGenerator<GenerationEvent> {
    const rest = stops.push(text.flush()).emit + stops.flush();
    if (rest) yield { kind: "text", text: rest, completionTokens: stats.completionTokens };
    yield end(reason);
  }
}

function endsWithAny(generated: Token[], sequences: Token[][]): boolean {
  return sequences.some((s) => s.length <= generated.length && s.every((t, i) => generated[generated.length - s.length + i] === t));
}
