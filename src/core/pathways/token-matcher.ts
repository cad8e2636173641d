/**
 * A multi-phrase matcher over word tokens (Aho–Corasick on tokens, not characters), built
 * once per pathway step. Every phrase is a sequence of exact tokens, optionally ending in a
 * prefix token (`abnormal*`). Matching a text of n tokens costs O(n + total token length +
 * hits): one pass of the automaton, and one walk of a character trie per token for the
 * prefix tails. No regular expression is compiled per phrase, so neither building nor
 * matching grows with anything but the phrases' and the text's size.
 */

export interface Phrase {
  /** Exact tokens (already normalised by the caller). */
  tokens: readonly string[];
  /** When set, one more token that must start with this (already normalised) prefix. */
  prefix?: string;
}

export interface PhraseHit {
  /** Index of the phrase in the list the matcher was built from. */
  phrase: number;
  /** First and one-past-last token index of the match. */
  start: number;
  end: number;
}

interface Node {
  next: Map<string, number>;
  fail: number;
  /** Phrases that end here with no prefix tail: [phrase, length in tokens]. */
  exact: Array<[number, number]>;
  /** Phrases whose exact part ends here and that need a prefix tail next: [phrase, length without the tail]. */
  tails: Array<[number, number]>;
}

interface TrieNode {
  next: Map<string, TrieNode>;
  /** Phrases whose whole body is this prefix (one-token wildcard phrases). */
  ends: number[];
}

export class TokenMatcher {
  private readonly nodes: Node[] = [{ next: new Map(), fail: 0, exact: [], tails: [] }];
  private readonly prefixes: string[] = [];
  private readonly prefixTrie: TrieNode = { next: new Map(), ends: [] };

  constructor(phrases: readonly Phrase[]) {
    phrases.forEach((p, i) => {
      let state = 0;
      for (const t of p.tokens) {
        let to = this.nodes[state]!.next.get(t);
        if (to === undefined) {
          to = this.nodes.length;
          this.nodes.push({ next: new Map(), fail: 0, exact: [], tails: [] });
          this.nodes[state]!.next.set(t, to);
        }
        state = to;
      }
      this.prefixes[i] = p.prefix ?? "";
      if (p.prefix === undefined) {
        if (p.tokens.length > 0) this.nodes[state]!.exact.push([i, p.tokens.length]);
      } else if (p.tokens.length === 0) this.insertPrefix(p.prefix, i);
      else this.nodes[state]!.tails.push([i, p.tokens.length]);
    });
    this.link();
  }

  private insertPrefix(prefix: string, phrase: number): void {
    let node = this.prefixTrie;
    for (const ch of prefix) {
      let to = node.next.get(ch);
      if (!to) node.next.set(ch, (to = { next: new Map(), ends: [] }));
      node = to;
    }
    node.ends.push(phrase);
  }

  /** Failure links breadth-first; each node inherits the outputs of its failure node, so matching never walks the links. */
  private link(): void {
    const queue: number[] = [];
    for (const child of this.nodes[0]!.next.values()) queue.push(child);
    for (let q = 0; q < queue.length; q++) {
      const u = queue[q]!;
      const node = this.nodes[u]!;
      for (const [t, v] of node.next) {
        let f = node.fail;
        while (f !== 0 && !this.nodes[f]!.next.has(t)) f = this.nodes[f]!.fail;
        const target = this.nodes[f]!.next.get(t);
        const child = this.nodes[v]!;
        child.fail = target !== undefined && target !== v ? target : 0;
        const inherited = this.nodes[child.fail]!;
        child.exact.push(...inherited.exact);
        child.tails.push(...inherited.tails);
        queue.push(v);
      }
    }
  }

  /** Phrases (by index) whose prefix `raw` starts with: one walk of the trie along `raw`. */
  private prefixHits(raw: string): number[] {
    const out: number[] = [];
    let node: TrieNode | undefined = this.prefixTrie;
    for (const ch of raw) {
      node = node.next.get(ch);
      if (!node) break;
      out.push(...node.ends);
    }
    return out;
  }

  /**
   * Every occurrence of every phrase. `tokens` are the exact forms the phrases' tokens are
   * compared with; `raw` the forms prefix tails are tested on (same length).
   */
  match(tokens: readonly string[], raw: readonly string[]): PhraseHit[] {
    const hits: PhraseHit[] = [];
    let state = 0;
    for (let i = 0; i < tokens.length; i++) {
      for (const phrase of this.prefixHits(raw[i]!)) hits.push({ phrase, start: i, end: i + 1 });
      const t = tokens[i]!;
      while (state !== 0 && !this.nodes[state]!.next.has(t)) state = this.nodes[state]!.fail;
      state = this.nodes[state]!.next.get(t) ?? 0;
      const node = this.nodes[state]!;
      for (const [phrase, len] of node.exact) hits.push({ phrase, start: i - len + 1, end: i + 1 });
      if (i + 1 < tokens.length)
        for (const [phrase, len] of node.tails) if (raw[i + 1]!.startsWith(this.prefixes[phrase]!)) hits.push({ phrase, start: i - len + 1, end: i + 2 });
    }
    return hits;
  }
}
