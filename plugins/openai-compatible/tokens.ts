/**
 * Token counting lives in core (src/text/tokens.ts) so the chat route and this plugin bill and
 * estimate the same way; these names stay for the plugin's existing callers.
 */
export { countTextTokens, estimateChatPromptTokens as estimatePromptTokens } from "../../src/text/tokens.ts";
