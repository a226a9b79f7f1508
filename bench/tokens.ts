/**
 * Token counting: reelay's linear counter (src/text/bpe-counter.ts) vs js-tiktoken, and the per-
 * request hold estimate, on ordinary and hostile texts. Median of 5 runs each, ms.
 *   bun bench/tokens.ts
 * js-tiktoken is quadratic in the length of a run without separators: it is measured only on the
 * smaller hostile texts (its 16,000-character run takes tens of seconds).
 */
import { Tiktoken } from "js-tiktoken/lite";
import cl100k_base from "js-tiktoken/ranks/cl100k_base";
import { countTextTokens, estimateChatRequestTokens } from "../src/text/tokens.ts";

const reference = new Tiktoken(cl100k_base);
const english = "The quick brown fox jumps over the lazy dog, then rests under the old oak tree by the river. ";
const cases: Array<[string, string, boolean]> = [
  ["English, 10 KB", english.repeat(110).slice(0, 10_000), true],
  ["English, 1 MB", english.repeat(11_000).slice(0, 1_000_000), true],
  ['"x" × 4,000', "x".repeat(4_000), true],
  ['"x" × 1,000,000', "x".repeat(1_000_000), false],
  ["4,000 spaces", " ".repeat(4_000), true],
  ["CJK run, 40,000 chars", "漢字".repeat(20_000), false],
  ["random printable, 100 KB", Array.from({ length: 100_000 }, (_, i) => String.fromCharCode(33 + ((i * 7919) % 90))).join(""), true],
];

function median(f: () => unknown, runs = 5): number {
  const t: number[] = [];
  for (let i = 0; i < runs; i++) {
    const s = performance.now();
    f();
    t.push(performance.now() - s);
  }
  return t.sort((a, b) => a - b)[Math.floor(runs / 2)]!;
}

console.log("| text | tokens | reelay count ms | js-tiktoken ms | hold estimate ms |");
console.log("|---|---:|---:|---:|---:|");
for (const [name, text, withReference] of cases) {
  const tokens = countTextTokens(text);
  const ours = median(() => countTextTokens(text));
  const ref = withReference ? median(() => reference.encode(text), 1).toFixed(1) : "(skipped)";
  const hold = median(() => estimateChatRequestTokens({ messages: [{ role: "user", content: text }] }));
  console.log(`| ${name} | ${tokens} | ${ours.toFixed(1)} | ${ref} | ${hold.toFixed(2)} |`);
}
