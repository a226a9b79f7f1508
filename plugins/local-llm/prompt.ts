/**
 * Messages → prompt tokens, and what ends an answer besides the model's end-of-generation tokens.
 *
 * - "template": the chat template in the GGUF (`tokenizer.chat_template`), through node-llama-cpp's
 *   chat wrappers: it renders the Jinja template itself, or a built-in wrapper it has verified renders
 *   the same text. The wrapper's stop triggers end the answer too.
 * - "plain": for models without a template (base models such as stories260K): the message contents
 *   joined by blank lines, after the BOS token when the model wants one, with no role markers; the
 *   model continues that text.
 */
import { LlamaText, resolveChatWrapper, type ChatHistoryItem, type ChatWrapper, type LlamaModel, type Token } from "node-llama-cpp";
import type { ChatMessage } from "./chat-request.ts";
import type { PromptFormat } from "./options.ts";

export interface Prompt {
  tokens: Token[];
  /** token sequences that end the answer (special-token triggers of the chat template) */
  stopTokens: Token[][];
  /** texts that end the answer (text triggers of the chat template) */
  stopTexts: string[];
}

export interface PromptRenderer {
  format: "template" | "plain";
  /** node-llama-cpp's name for the wrapper that renders the template ("JinjaTemplate", "ChatML" …) */
  wrapper?: string;
  render(messages: ChatMessage[]): Prompt;
}

export function hasChatTemplate(model: LlamaModel): boolean {
  const template = model.fileInfo.metadata?.tokenizer?.chat_template;
  return typeof template === "string" && template.trim() !== "";
}

export function promptRenderer(model: LlamaModel, format: PromptFormat): PromptRenderer {
  if (format === "template" && !hasChatTemplate(model)) throw new Error(`promptFormat "template": the GGUF has no chat template (tokenizer.chat_template); use "plain" or "auto"`);
  if (format === "plain" || (format === "auto" && !hasChatTemplate(model))) return plainRenderer(model);
  return templateRenderer(model, resolveChatWrapper(model, { warningLogs: false }));
}

function plainRenderer(model: LlamaModel): PromptRenderer {
  const bos = model.tokens.shouldPrependBosToken && model.tokens.bos !== null ? [model.tokens.bos] : [];
  return {
    format: "plain",
    render: (messages) => ({
      tokens: [...bos, ...model.tokenize(messages.map((m) => m.content).join("\n\n"))],
      stopTokens: [],
      stopTexts: [],
    }),
  };
}

function templateRenderer(model: LlamaModel, wrapper: ChatWrapper): PromptRenderer {
  return {
    format: "template",
    wrapper: wrapper.wrapperName,
    render(messages) {
      const history: ChatHistoryItem[] = messages.map((m) =>
        m.role === "assistant" ? { type: "model", response: [m.content] } : { type: m.role, text: m.content },
      );
      // an empty model turn asks for a new answer; a final assistant message is continued instead
      if (messages.at(-1)?.role !== "assistant") history.push({ type: "model", response: [] });
      const state = wrapper.generateContextState({ chatHistory: history });
      let text = state.contextText;
      if (state.noPrefixTrigger?.type === "response" && state.noPrefixTrigger.inject) text = LlamaText([text, state.noPrefixTrigger.inject]);
      const stopTokens: Token[][] = [];
      const stopTexts: string[] = [];
      for (const trigger of state.stopGenerationTriggers) {
        if (trigger.values.every((v) => typeof v === "string")) {
          const s = trigger.values.join("");
          if (s) stopTexts.push(s);
        } else {
          const tokens = trigger.tokenize(model.tokenizer);
          if (tokens.length) stopTokens.push(tokens);
        }
      }
      return { tokens: text.tokenize(model.tokenizer), stopTokens, stopTexts };
    },
  };
}
