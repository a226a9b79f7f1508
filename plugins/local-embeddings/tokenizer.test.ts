import { expect, test } from "bun:test";
import { SentencePieceTokenizer } from "./tokenizer.ts";
import { loadVocabularySync } from "./vocabulary.ts";

const tokenizer = new SentencePieceTokenizer(loadVocabularySync());

test("the ids the earlier whole-lattice implementation gave (checked id for id against the official tokenizer)", () => {
  expect(tokenizer.encode("Hello world")).toEqual([341, 4125, 311]);
  expect(tokenizer.encode("The cat sat on the mat.")).toEqual([34, 1163, 3757, 25, 9, 688, 17, 6]);
  // unknown symbols in a row are one <unk> (id 0)
  expect(tokenizer.encode("naïve café 漢字")).toEqual([1216, 0, 105, 976, 209, 1133, 30, 0]);
  expect(tokenizer.encode("")).toEqual([]);
});

test("a long input is tokenized in slices, with the event loop free between them, to the same ids", async () => {
  const texts = ["ab".repeat(40_000), "\t".repeat(60_000), "漢".repeat(30_000), "the cat sat on the mat ".repeat(4_000), "naïve café ﬁ 🙂 ".repeat(3_000)];
  for (const text of texts) {
    let turns = 0;
    let counting = true;
    const tick = () => {
      turns++;
      if (counting) setImmediate(tick);
    };
    setImmediate(tick);
    const sliced = await tokenizer.encodeSliced(text, 0);
    counting = false;
    const whole = tokenizer.encode(text);
    expect(sliced).toEqual({ count: whole.length, ids: whole });
    // a slice of 0 ms is one step of 512 positions: one turn of the event loop per step (the
    // whole input in one block would be one turn)
    expect(turns).toBeGreaterThanOrEqual(Math.floor([...text].length / 512));
  }
});

test("the longest piece is what the plugin's input-length bound assumes; a sliced build is the same tokenizer", async () => {
  const { LONGEST_PIECE } = await import("./index.ts");
  expect(tokenizer.longestPiece).toBe(LONGEST_PIECE);
  const sliced = await SentencePieceTokenizer.build(loadVocabularySync(), 0);
  for (const text of ["Hello world", "naïve café 漢字", "the cat sat on the mat ".repeat(50)]) expect(sliced.encode(text)).toEqual(tokenizer.encode(text));
});

test("encodeSliced counts every token and keeps only the first `keep` ids", async () => {
  const text = "the cat sat on the mat ".repeat(500);
  const all = tokenizer.encode(text);
  const { count, ids } = await tokenizer.encodeSliced(text, 4, 128);
  expect(count).toBe(all.length);
  expect(ids).toEqual(all.slice(0, 128));
});
