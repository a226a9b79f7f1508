/**
 * Generated tokens → text, one token at a time. Each token is detokenized with the tokens before it
 * as context (SentencePiece decides the leading space from them), and a token that ends inside a
 * UTF-8 character (byte-fallback tokens: one emoji can be 4 tokens) is held until the character
 * is complete, so no U+FFFD is ever sent for a character that arrives in pieces.
 */
import type { LlamaModel, Token } from "node-llama-cpp";

/** a UTF-8 character is at most 4 bytes, so at most 4 byte tokens */
const MAX_PENDING = 4;
/** tokens of context kept for detokenizing the next one */
const CONTEXT = 8;

export class TokenText {
  private pending: Token[] = [];
  private context: Token[];

  constructor(private readonly model: LlamaModel, promptTokens: readonly Token[]) {
    this.context = promptTokens.slice(-CONTEXT);
  }

  push(token: Token): string {
    this.pending.push(token);
    const text = this.model.detokenize(this.pending, false, this.context);
    if (text.endsWith("\uFFFD") && this.pending.length < MAX_PENDING) return "";
    this.context = [...this.context, ...this.pending].slice(-CONTEXT);
    this.pending = [];
    return text;
  }

  /** whatever is still pending (an incomplete character at the very end of the answer) */
  flush(): string {
    if (this.pending.length === 0) return "";
    const text = this.model.detokenize(this.pending, false, this.context);
    this.pending = [];
    return text;
  }
}
