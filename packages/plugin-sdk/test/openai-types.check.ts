/**
 * Compile-time check (tsc -p packages/plugin-sdk, run by package.test.ts): what the official
 * `openai` package types as a chat request, completion and chunk fits the SDK's types, so a
 * plugin author's objects from either world are interchangeable.
 */
import type OpenAI from "openai";
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionRequest, ChatMessage } from "../src/index.ts";

// (the request itself carries unknown parameters, an index signature the `openai` interfaces lack: its parts are checked)
export const request = (r: OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming): ChatCompletionRequest => ({ ...r });
export const message = (m: OpenAI.Chat.Completions.ChatCompletionMessageParam): ChatMessage => m;
export const completion = (c: OpenAI.Chat.Completions.ChatCompletion): ChatCompletion => c;
export const chunk = (c: OpenAI.Chat.Completions.ChatCompletionChunk): ChatCompletionChunk => c;
