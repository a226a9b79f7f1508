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
  children: Map<string, TrieNode>;
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

  constructor(vocabulary: Vocabulary) {
    this.pieceLengths = new Int32Array(vocabulary.length).fill(1);
    for (let id = RESERVED_IDS; id < vocabulary.length; id++) {
      const [piece, score] = vocabulary[id]!;
      let node = this.root;
      for (const symbol of piece) {
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
  }

  encode(text: string): number[] {
    const normalized = text.normalize("NFKC");
    if (normalized.length === 0) return [];
    const symbols = Array.from(SEPARATOR + normalized.replaceAll(" ", SEPARATOR));
    const n = symbols.length;

    // Lattice: for every end position, the (start, id, score) of each piece ending there, in
    // ascending start order (the order the official implementation visits them).
    const ending: Array<Array<{ start: number; id: number; score: number }>> = Array.from({ length: n + 1 }, () => []);
    for (let start = 0; start < n; start++) {
      let node = this.root.children.get(symbols[start]!);
      let matched = false;
      for (let end = start + 1; node; end++) {
        if (node.id >= 0) {
          ending[end]!.push({ start, id: node.id, score: node.score });
          matched = true;
        }
        node = end < n ? node.children.get(symbols[end]!) : undefined;
      }
      if (!matched) ending[start + 1]!.push({ start, id: UNKNOWN_ID, score: 0 });
    }

    const best = new Float64Array(n + 1);
    const bestId = new Int32Array(n + 1);
    for (let end = 1; end <= n; end++) {
      for (const { start, id, score } of ending[end]!) {
        const total = score + best[start]!;
        if (best[end] === 0 || total >= best[end]!) {
          best[end] = total;
          bestId[end] = id;
        }
      }
    }

    const reversed: number[] = [];
    for (let pos = n; pos > 0; pos -= this.pieceLengths[bestId[pos]!]!) reversed.push(bestId[pos]!);

    const ids: number[] = [];
    for (let i = reversed.length - 1; i >= 0; i--) {
      const id = reversed[i]!;
      if (id === UNKNOWN_ID && ids.length > 0 && ids[ids.length - 1] === UNKNOWN_ID) continue;
      ids.push(id);
    }
    return ids;
  }
}
