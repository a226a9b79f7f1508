/**
 * A scripted conversation for the fake OpenAI upstream (openai-upstream.ts), for agents that loop
 * over several model calls (Codex CLI: a tool call, then the answer after the tool's result).
 *
 *   const script = scriptedTurns([
 *     { reasoning: "I will write it.", toolCalls: [{ name: "exec_command", arguments: '{"cmd":"…"}' }] },
 *     { reply: "Done." },
 *   ]);
 *   fake.script(script.pick);
 *
 * A request gets the turn at the index of the number of assistant messages it carries: the first
 * request of a conversation gets turn 0, the request after the model's first answer (with its tool
 * results) turn 1, and so on; a retried request gets the same turn again, and a resumed
 * conversation carrying earlier turns goes on where it stopped. A request past the last turn is
 * answered 400 with a message naming the script, so a test fails saying so rather than hanging.
 */
import { Tiktoken } from "js-tiktoken/lite";
import cl100k_base from "js-tiktoken/ranks/cl100k_base";
import type { FakeBehaviour } from "./openai-upstream.ts";

const encoder = new Tiktoken(cl100k_base);

export interface ScriptedTurn {
  /** `reasoning_content` before the answer or the calls */
  reasoning?: string;
  /** the text answer */
  reply?: string;
  /** tool calls (the request must offer tools, see FakeBehaviour.toolCalls) */
  toolCalls?: Array<{ name: string; arguments: string }>;
}

export interface ScriptedConversation {
  /** for fake.script(): the behaviour of the turn this request is at */
  pick(body: any): FakeBehaviour;
  /** the turn index of each chat request seen, in order */
  seen: number[];
}

export function scriptedTurns(turns: ScriptedTurn[]): ScriptedConversation {
  const seen: number[] = [];
  return {
    seen,
    pick(body) {
      const messages: Array<{ role?: string }> = Array.isArray(body?.messages) ? body.messages : [];
      const index = messages.filter((m) => m?.role === "assistant").length;
      seen.push(index);
      const turn = turns[index];
      if (!turn) return { status: 400, errorMessage: `scripted conversation: no turn ${index} (the script has ${turns.length}); the request carried ${index} assistant messages` };
      return { reasoning: turn.reasoning, reply: turn.reply ?? (turn.toolCalls ? undefined : ""), toolCalls: turn.toolCalls };
    },
  };
}

/** The completion_tokens the fake reports for a turn: cl100k tokens of its reasoning, and of its reply or of each call's name + arguments. */
export function turnCompletionTokens(turn: ScriptedTurn): number {
  const n = (s: string | undefined) => (s ? encoder.encode(s).length : 0);
  const answer = turn.toolCalls ? turn.toolCalls.reduce((sum, c) => sum + n(c.name + c.arguments), 0) : n(turn.reply);
  return n(turn.reasoning) + answer;
}
