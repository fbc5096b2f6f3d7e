/**
 * A Unigram tokenizer.json built deterministically from a seed, with no sentencepiece: pieces cut
 * from the multilingual text (every character of it, `▁`-prefixed words, random substrings),
 * scores from a coarse grid (so that many segmentations tie and HF's tie-breaking is exercised),
 * a piece listed twice, XLM-R's special tokens, optionally the 256 `<0xNN>` byte pieces, and a
 * `Precompiled` charsmap built here: a darts-clone double array (the layout spm_precompiled reads)
 * holding fullwidth -> ASCII, whitespace -> space, removals, expansions and two-character rules.
 */
import { mulberry32 } from '../helpers/rng';
import { MULTILINGUAL_WORDS, multilingualLines } from './multilingual';

/** Charsmap rules: key -> replacement. */
export function charsmapRules(): [string, string][] {
  const rules: [string, string][] = [];
  for (let c = 0xff01; c <= 0xff5e; c++) rules.push([String.fromCharCode(c), String.fromCharCode(c - 0xfee0)]);
  for (const ws of ['\t', '\n', '\r', '\u3000', '\u00a0', '\u2009', '\u000b', '\u000c', '\u0085', '\u2028']) rules.push([ws, ' ']);
  rules.push(['\u200b', ''], ['\u00ad', ''], ['\ufeff', ''], ['\u200d\u200d', '']);
  rules.push(['ﬁ', 'fi'], ['①', '1'], ['②', '2'], ['③', '3'], ['½', '1⁄2'], ['™', 'TM'], ['µ', 'μ'], ['²', '2']);
  rules.push(['e\u0301', 'é'], ['A\u030a', 'Å'], ['o\u0308', 'ö'], ['ｆ\u0301', 'ƒ']);
  return rules;
}

/** Builds a precompiled_charsmap blob: u32 trie size, darts-clone units, NUL-terminated replacements. */
export function buildCharsmap(rules: [string, string][]): Buffer {
  interface Node { children: Map<number, Node>; value: number }
  const root: Node = { children: new Map(), value: -1 };
  const normalized: Buffer[] = [];
  let at = 0;
  for (const [key, value] of rules) {
    let node = root;
    for (const b of Buffer.from(key, 'utf8')) {
      if (!node.children.has(b)) node.children.set(b, { children: new Map(), value: -1 });
      node = node.children.get(b)!;
    }
    const bytes = Buffer.concat([Buffer.from(value, 'utf8'), Buffer.of(0)]);
    node.value = at;
    normalized.push(bytes);
    at += bytes.length;
  }
  const label: number[] = [0];
  const leaf: boolean[] = [false];
  const offset: number[] = [0];
  const value: (number | undefined)[] = [undefined];
  const used = new Set<number>([0]);
  const queue: [Node, number][] = [[root, 0]];
  while (queue.length > 0) {
    const [node, pos] = queue.shift()!;
    const labels = [...node.children.keys()].sort((a, b) => a - b);
    const slots = node.value >= 0 ? [0, ...labels] : labels;
    if (slots.length === 0) continue;
    let base = 1;
    while (slots.some((c) => used.has(base ^ c) || (base ^ c) === 0)) base++;
    offset[pos] = pos ^ base;
    leaf[pos] = node.value >= 0;
    for (const c of slots) used.add(base ^ c);
    if (node.value >= 0) value[base] = node.value;
    for (const c of labels) {
      label[base ^ c] = c;
      queue.push([node.children.get(c)!, base ^ c]);
    }
  }
  const size = ((Math.max(...used) >> 8) + 1) << 8;
  const units = Buffer.alloc(size * 4);
  for (let i = 0; i < size; i++) {
    let u = 0;
    if (value[i] !== undefined) u = (value[i]! | 0x80000000) >>> 0;
    else if (used.has(i)) u = ((label[i] ?? 0) | (leaf[i] ? 1 << 8 : 0) | ((offset[i] ?? 0) << 10)) >>> 0;
    if ((offset[i] ?? 0) >= 1 << 21) throw new Error('charsmap too large for the test builder');
    units.writeUInt32LE(u, i * 4);
  }
  const head = Buffer.alloc(4);
  head.writeUInt32LE(units.length, 0);
  return Buffer.concat([head, units, ...normalized]);
}

export interface UnigramJsonOptions {
  seed?: number;
  byteFallback?: boolean;
  /** 'xlmr': Precompiled + Replace(" {2,}" -> " "); 'spm': Precompiled + Strip(right) + Replace(" {2,}" -> "▁") (transformers' SpmConverter); 'nfkc': NFKC + Strip + Replace; 'none'. */
  normalizer?: 'xlmr' | 'spm' | 'nfkc' | 'none';
  prependScheme?: 'always' | 'first' | 'never';
  split?: boolean;
  /** 'metaspace' or the byte-fallback Sequence (Replace ▁, ByteFallback, Fuse, Strip). */
  decoder?: 'metaspace' | 'sequence';
  postProcessor?: 'template' | 'roberta' | 'none';
  /** Metaspace as older tokenizer.json files (XLM-R's, bge-m3's) write it: add_prefix_space and str_rep, no prepend_scheme. */
  legacyMetaspace?: boolean;
  /** Leave out unk_id (then a character outside the pieces is an error). */
  noUnk?: boolean;
}

const SPECIAL = ['<s>', '<pad>', '</s>', '<unk>'];

/** The [piece, score] list: specials, byte pieces, then the seeded pieces; <mask> last. */
export function seededPieces(seed: number, byteFallback: boolean, noUnk = false): [string, number][] {
  const r = mulberry32(seed);
  const score = () => -Math.round(1 + r() * 22) / 2; // -0.5 .. -11.5 in halves: ties are common
  const pieces: [string, number][] = SPECIAL.map((s) => [s, 0]);
  if (byteFallback) for (let b = 0; b < 256; b++) pieces.push([`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`, 0]);
  const seen = new Set(pieces.map((p) => p[0]));
  const add = (p: string) => {
    if (p.length === 0 || seen.has(p) || /\p{Cs}/u.test(p)) return;
    seen.add(p);
    pieces.push([p, score()]);
  };
  const text = multilingualLines(400, seed).join(' ');
  const chars = [...new Set([...text.normalize('NFKC')])].filter((c) => c !== ' ' && !(noUnk && false));
  // Leave some characters out (unknown: byte fallback or <unk>) unless every one must be known.
  for (const c of chars) if (noUnk || r() < 0.85) add(c);
  for (const c of 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?;:()[]{}<>/\\|-_=+*&^%$#@~`\'"') add(c);
  add('▁');
  for (const w of MULTILINGUAL_WORDS) {
    const n = w.normalize('NFKC');
    add('▁' + n);
    if (r() < 0.5) add(n);
    for (let k = 0; k < 3; k++) {
      const cps = [...n];
      const a = Math.floor(r() * cps.length);
      const len = 2 + Math.floor(r() * 4);
      add(cps.slice(a, a + len).join(''));
      add('▁' + cps.slice(0, 1 + Math.floor(r() * cps.length)).join(''));
    }
  }
  const cps = [...text.normalize('NFKC').replaceAll(' ', '▁')];
  for (let k = 0; k < 1500; k++) {
    const a = Math.floor(r() * cps.length);
    add(cps.slice(a, a + 2 + Math.floor(r() * 5)).join(''));
  }
  for (let k = 0; k < 60; k++) add('▁' + String(Math.floor(r() * 1000)));
  // A piece listed twice (HF finds it by its last id, with that id's score).
  pieces.push(['▁the', -0.5]);
  pieces.push(['<mask>', 0]);
  return pieces;
}

function template() {
  const tok = (id: string) => ({ SpecialToken: { id, type_id: 0 } });
  const seq = (id: string, type_id: number) => ({ Sequence: { id, type_id } });
  return {
    type: 'TemplateProcessing',
    single: [tok('<s>'), seq('A', 0), tok('</s>')],
    pair: [tok('<s>'), seq('A', 0), tok('</s>'), tok('</s>'), seq('B', 0), tok('</s>')],
    special_tokens: { '<s>': { id: '<s>', ids: [0], tokens: ['<s>'] }, '</s>': { id: '</s>', ids: [2], tokens: ['</s>'] } },
  };
}

/** The tokenizer.json (as an object). */
export function unigramTokenizerJson(options: UnigramJsonOptions = {}): any {
  const { seed = 17, byteFallback = false, normalizer = 'xlmr', prependScheme = 'always', split = true, decoder = 'metaspace', postProcessor = 'template' } = options;
  const pieces = seededPieces(seed, byteFallback, options.noUnk);
  const charsmap = { type: 'Precompiled', precompiled_charsmap: buildCharsmap(charsmapRules()).toString('base64') };
  const normalizers = {
    xlmr: [charsmap, { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' }],
    spm: [charsmap, { type: 'Strip', strip_left: false, strip_right: true }, { type: 'Replace', pattern: { Regex: ' {2,}' }, content: '▁' }],
    nfkc: [{ type: 'NFKC' }, { type: 'Strip', strip_left: true, strip_right: true }, { type: 'Replace', pattern: { String: '\t' }, content: ' ' }],
    none: [],
  }[normalizer];
  const added = [...SPECIAL, '<mask>'].map((content) => ({
    id: content === '<mask>' ? pieces.length - 1 : SPECIAL.indexOf(content),
    content,
    single_word: false,
    lstrip: content === '<mask>',
    rstrip: false,
    normalized: false,
    special: true,
  }));
  const metaspace = options.legacyMetaspace
    ? { type: 'Metaspace', replacement: '▁', str_rep: '▁', add_prefix_space: prependScheme !== 'never', ...(prependScheme === 'never' ? { prepend_scheme: 'never' } : {}) }
    : { type: 'Metaspace', replacement: '▁', prepend_scheme: prependScheme, split };
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: normalizers.length === 0 ? null : { type: 'Sequence', normalizers },
    pre_tokenizer: metaspace,
    post_processor: postProcessor === 'template' ? template() : postProcessor === 'roberta' ? { type: 'RobertaProcessing', sep: ['</s>', 2], cls: ['<s>', 0], trim_offsets: true, add_prefix_space: true } : null,
    decoder:
      decoder === 'metaspace'
        ? metaspace
        : {
            type: 'Sequence',
            decoders: [
              { type: 'Replace', pattern: { String: '▁' }, content: ' ' },
              { type: 'ByteFallback' },
              { type: 'Fuse' },
              { type: 'Strip', content: ' ', start: 1, stop: 0 },
            ],
          },
    model: { type: 'Unigram', unk_id: options.noUnk ? null : 3, vocab: pieces, byte_fallback: byteFallback },
  };
}
