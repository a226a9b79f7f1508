import { expect, test } from "bun:test";
import { countTextTokens, estimateChatPromptTokens } from "./tokens.ts";

test("chat prompt estimate: OpenAI's cookbook formula", () => {
  // 3 priming + 3 per message + role + content text; image parts do not count
  expect(estimateChatPromptTokens([{ role: "system", content: "Be brief." }])).toBe(3 + 3 + 1 + countTextTokens("Be brief."));
  expect(estimateChatPromptTokens([{ role: "user", content: [{ type: "text", text: "hi" }, { type: "image_url", image_url: { url: "x" } }] }])).toBe(3 + 3 + 1 + 1);
  expect(estimateChatPromptTokens([{ role: "user", content: "x", name: "ann" }])).toBe(3 + 3 + 1 + 1 + 1 + 1);
  expect(estimateChatPromptTokens(undefined)).toBe(0);
});
