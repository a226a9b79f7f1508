/**
 * SentencePiece unigram tokenizer for USE-lite, producing the same ids as the official
 * @tensorflow-models/universal-sentence-encoder Tokenizer (a port of SentencePiece's EncodeAsIds):
 * NFKC, '▁' prefix and for every space, Viterbi over the vocabulary scores, unknown symbols → id 0,
 * consecutive unknowns merged. The official lattice has two quirks we keep on purpose, because the
 * weights were used with that tokenizer: a best score of exactly 0 counts as "not reached yet", and
 * on equal scores the later-starting piece wins.
 */

/** vocab.json: [piece, log-probability score]; the index is the token id */
export type Vocabulary = Array<[string, number]>;

const SEPARATOR = "\u2581";
/** ids 0–5 are <unk>, <s>, </s> and three control symbols; they never match text */
const RESERVED_IDS = 6;
const UNKNOWN_ID = 0;

interface TrieNode {
  /** keyed by code point (numbers, not one-character strings: a 300k-character input would be
   * 300k heap strings) */
  children: Map<number, TrieNode>;
  /** token id when a piece ends here, else -1 */
  id: number;
  score: number;
  /** length of the piece in code points */
  length: number;
}

function newNode(length: number): TrieNode {
  return { children: new Map(), id: -1, score: 0, length };
}

export class SentencePieceTokenizer {
  private readonly root = newNode(0);
  private readonly pieceLengths: Int32Array;

  constructor(private readonly vocabulary: Vocabulary, built = true) {
    this.pieceLengths = new Int32Array(vocabulary.length).fill(1);
    if (built) this.addPieces(RESERVED_IDS, vocabulary.length);
  }

  /**
   * The same tokenizer, its trie built in slices of about `sliceMs` with the event loop free in
   * between (8,000 pieces: 20–90 ms here, on the first request of a model that was not loaded).
   */
  static async build(vocabulary: Vocabulary, sliceMs = 4): Promise<SentencePieceTokenizer> {
    const t = new SentencePieceTokenizer(vocabulary, false);
    for (let at = RESERVED_IDS; at < vocabulary.length; ) {
      const started = performance.now();
      do at = t.addPieces(at, at + 64);
      while (at < vocabulary.length && performance.now() - started < sliceMs);
      await new Promise((r) => setImmediate(r));
    }
    return t;
  }

  private addPieces(from: number, to: number): number {
    const end = Math.min(to, this.vocabulary.length);
    for (let id = from; id < end; id++) {
      const [piece, score] = this.vocabulary[id]!;
      let node = this.root;
      for (const char of piece) {
        const symbol = char.codePointAt(0)!;
        let child = node.children.get(symbol);
        if (!child) {
          child = newNode(node.length + 1);
          node.children.set(symbol, child);
        }
        node = child;
      }
      node.id = id;
      node.score = score;
      this.pieceLengths[id] = node.length;
    }
    return end;
  }

  /** The ids of `text`, in one go (short texts; long ones: `encodeSliced`). */
  encode(text: string): number[] {
    const run = this.start(text);
    run.step(Infinity);
    return run.ids();
  }

  /**
   * The token count of `text` and its first `keep` ids, computed in slices of about `sliceMs` with
   * the event loop free in between: a 262,144-character input (the most an input may have) is
   * ~0.2 s of lattice work on this thread, which must never be one block. Only `keep` ids are
   * materialised (the model reads the first 128; the bill needs the count of all).
   */
  async encodeSliced(text: string, sliceMs = 4, keep = Number.POSITIVE_INFINITY): Promise<{ count: number; ids: number[] }> {
    const run = this.start(text);
    for (;;) {
      const sliceEnd = performance.now() + sliceMs;
      while (!run.step(512)) {
        if (performance.now() >= sliceEnd) break;
      }
      if (run.done) return run.result(keep);
      await new Promise((r) => setImmediate(r));
    }
  }

  /** The longest piece, in code points: no text of more than n × this code points has ≤ n tokens. */
  get longestPiece(): number {
    let longest = 1;
    for (let id = RESERVED_IDS; id < this.pieceLengths.length; id++) longest = Math.max(longest, this.pieceLengths[id]!);
    return longest;
  }

  /**
   * Viterbi over the lattice as one forward pass: for each start position in ascending order, every
   * piece starting there relaxes the best score of the position it ends at. Pieces ending at one
   * position are thereby visited in ascending start order — the order the official implementation
   * uses, which its two quirks depend on — and the pass can stop and resume at any start.
   */
  private start(text: string) {
    const normalized = text.normalize("NFKC");
    const symbols = codePoints(normalized.length === 0 ? "" : SEPARATOR + normalized.replaceAll(" ", SEPARATOR));
    const n = symbols.length;
    const best = new Float64Array(n + 1);
    const bestId = new Int32Array(n + 1);
    const relax = (end: number, id: number, total: number) => {
      if (best[end] === 0 || total >= best[end]!) {
        best[end] = total;
        bestId[end] = id;
      }
    };
    let next = 0;
    const root = this.root;
    const pieceLengths = this.pieceLengths;
    const run = {
      done: n === 0,
      /** advance over up to `positions` start positions; true when the pass is complete */
      step(positions: number): boolean {
        const stop = Math.min(n, next + positions);
        for (let start = next; start < stop; start++) {
          const from = best[start]!;
          let node = root.children.get(symbols[start]!);
          let matched = false;
          for (let end = start + 1; node; end++) {
            if (node.id >= 0) {
              relax(end, node.id, node.score + from);
              matched = true;
            }
            node = end < n ? node.children.get(symbols[end]!) : undefined;
          }
          if (!matched) relax(start + 1, UNKNOWN_ID, from);
        }
        next = stop;
        run.done = next >= n;
        return run.done;
      },
      /** all ids (the whole text) */
      ids(): number[] {
        return run.result(Number.POSITIVE_INFINITY).ids;
      },
      /**
       * The count and the first `keep` ids. Backtracks into a typed array (a JS array of a million
       * ids took 240 ms here), merging consecutive unknowns as the official tokenizer does.
       */
      result(keep: number): { count: number; ids: number[] } {
        const reversed = new Int32Array(n);
        let k = 0;
        for (let pos = n; pos > 0; pos -= pieceLengths[bestId[pos]!]!) reversed[k++] = bestId[pos]!;
        const ids: number[] = [];
        let count = 0;
        let previous = -1;
        for (let i = k - 1; i >= 0; i--) {
          const id = reversed[i]!;
          if (id === UNKNOWN_ID && previous === UNKNOWN_ID) continue;
          previous = id;
          if (count < keep) ids.push(id);
          count++;
        }
        return { count, ids };
      },
    };
    return run;
  }
}

function codePoints(text: string): Uint32Array {
  const out = new Uint32Array(text.length);
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const cp = text.codePointAt(i)!;
    out[n++] = cp;
    if (cp > 0xffff) i++;
  }
  return out.subarray(0, n);
}
