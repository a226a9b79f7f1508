import { describe, expect, test } from "bun:test";
import { Tiktoken } from "js-tiktoken/lite";
import cl100k_base from "js-tiktoken/ranks/cl100k_base";
import { BpeCounter } from "./bpe-counter.ts";
import { countTextTokens, estimateChatRequestTokens, EXACT_ESTIMATE_BYTES, tokenEstimator } from "./tokens.ts";

const reference = new Tiktoken(cl100k_base);

describe("countTextTokens", () => {
  test("equals tiktoken's cl100k_base count on ordinary text, code and Unicode", () => {
    const texts = [
      "Hello, world!", "  leading spaces\n\n\ttabs  and trailing ", "The year 2026: 1234567 apples.",
      "const f = (x) => { return x ** 2; } // comment\n", "Ünïcödé café naïve — “quotes” 漢字かな 🙂👍🏽",
      "I'm sure you'll see it's what they'd've done", "https://example.com/path?query=1&b=2#frag", "a".repeat(31), "x y ".repeat(500),
    ];
    for (const t of texts) expect({ t, n: countTextTokens(t) }).toEqual({ t, n: reference.encode(t).length });
  });

  test("special-token text is counted as text instead of throwing", () => {
    expect(countTextTokens("hi <|endoftext|> there")).toBeGreaterThan(3);
    expect(() => reference.encode("<|endoftext|>")).toThrow(); // what js-tiktoken does
  });

  test("a limit stops the count there", () => {
    expect(countTextTokens("one two three four five six", 3)).toBe(3);
    expect(countTextTokens("x ".repeat(1_000_000), 10)).toBe(10);
  });

  test("long runs without separators count about one token per 8 bytes, like tiktoken, without the quadratic merge", () => {
    // tiktoken: 125 tokens for "x" × 1,000 (and 0.27 s on the event loop with js-tiktoken)
    const n = countTextTokens("x".repeat(1_000_000));
    expect(n).toBeGreaterThanOrEqual(125_000);
    expect(n).toBeLessThanOrEqual(130_000);
    expect(countTextTokens("漢".repeat(100_000))).toBeGreaterThan(0);
  });
});

describe("prompt estimates for holds", () => {
  test("exact within the per-request budget", () => {
    const messages = [{ role: "system", content: "Be brief." }, { role: "user", content: "Name three colours.", name: "ann" }];
    const exact = 3 + (3 + 1 + reference.encode("Be brief.").length) + (3 + 1 + reference.encode("Name three colours.").length + 1 + 1);
    expect(estimateChatRequestTokens({ messages })).toBe(exact);
  });

  test("past the budget every byte counts as one token: an upper bound of the exact count", () => {
    const big = "word ".repeat(200_000) + "x".repeat(100_000) + "漢字".repeat(50_000);
    const estimate = estimateChatRequestTokens({ messages: [{ role: "user", content: big }], tools: [{ type: "function", function: { name: "f", description: "d".repeat(50_000) } }] });
    expect(estimate).toBeGreaterThanOrEqual(countTextTokens(big));
    expect(estimate).toBeGreaterThanOrEqual(Buffer.byteLength(big));
  });

  test("the budget is shared by all texts of one request", () => {
    const count = tokenEstimator(EXACT_ESTIMATE_BYTES);
    const [a, b, c] = ["hello ", "world ", "again "].map((w) => w.repeat(1000)); // 6000 bytes each
    expect([count(a), count(b)]).toEqual([countTextTokens(a), countTextTokens(b)]);
    expect(count(c)).toBe(6000); // 18,000 bytes > 16 KiB: bytes from here on
  });

  test("a long text counted before (a resent system prompt or history) is exact again without using the budget", () => {
    const history = "We spoke about trains to Porto. ".repeat(200); // 6400 bytes
    const exact = countTextTokens(history);
    expect(tokenEstimator(EXACT_ESTIMATE_BYTES)(history)).toBe(exact); // counted once, remembered
    const count = tokenEstimator(7000);
    expect(count(history)).toBe(exact); // remembered: no budget used
    const other = "Then about buses to Faro. ".repeat(200); // 5200 bytes, fits the untouched budget
    expect(count(other)).toBe(countTextTokens(other));
  });
});

describe("BpeCounter.build", () => {
  test("parses cl100k (one line of 100,256 tokens) in many slices with the event loop free between them, to the same table", async () => {
    let turns = 0;
    let counting = true;
    const tick = () => {
      turns++;
      if (counting) setImmediate(tick);
    };
    setImmediate(tick);
    const sliced = await BpeCounter.build(cl100k_base, 1);
    counting = false;
    // at 1 ms per slice the ~100–400 ms of parsing is spread over dozens of turns; one block was 1 turn
    expect(turns).toBeGreaterThan(20);
    const whole = new BpeCounter(cl100k_base);
    for (const t of ["Hello, world!", "漢字かな 🙂", "x".repeat(100), "const f = (x) => x ** 2;"]) expect(sliced.count(t)).toBe(whole.count(t));
    expect((sliced as unknown as { ranks: Map<string, number> }).ranks.size).toBe(100_256);
  });
});
