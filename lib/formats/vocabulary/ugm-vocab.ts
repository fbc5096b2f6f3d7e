/**
 * An HF folder's SentencePiece Unigram tokenizer.json (XLM-R, bge-m3, multilingual-e5) as the GGUF
 * UGM vocabulary (`tokenizer.ggml.model` "t5") llama.cpp's converter writes for it
 * (conversion/bert.py `_xlmroberta_set_vocab`, tokenizer.json branch, and gguf-py's SpecialVocab):
 *  - the pieces and scores by id, padded to config.json's vocab_size with "[PAD<i>]" pieces typed
 *    UNUSED scored -10000; the unknown id typed UNKNOWN, special added tokens CONTROL, the other
 *    added tokens USER_DEFINED, the rest NORMAL;
 *  - add_space_prefix from the Metaspace pre-tokenizer (prepend_scheme other than "never", or the
 *    older add_prefix_space), remove_extra_whitespaces from tokenizer_config.json's
 *    clean_up_tokenization_spaces (as the converter reads it; default true), the normalizer's
 *    Precompiled charsmap;
 *  - the special ids from tokenizer_config.json's <type>_token (looked up among the added
 *    tokens), else config.json's <type>_token_id; BOS/EOS added as the post-processor adds them
 *    (RobertaProcessing: both; TemplateProcessing: its single template's first / last special
 *    token), tokenizer_config.json's add_bos_token / add_eos_token overriding.
 * A token string listed twice is refused: llama.cpp cannot load such a vocabulary.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import type { TokenizerData } from '../../addon/weights';
import { UnsupportedError } from '../../base/errors';
import { runNow } from '../../base/steps';
import { TOKEN_CONTROL, TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_UNUSED, TOKEN_USER_DEFINED } from '../../tokenizers/token-types';
import { validateTokenizerJsonSteps, MAX_TOKEN_ID } from '../../tokenizers/validate-json';
import { fail } from '../containers/bytes';
import { readJsonFile, type HfJson } from '../containers/hf-config';

type Gguf = Extract<TokenizerData, { kind: 'gguf' }>;

/** tokenizer.json files above this are not tokenizers (XLM-R's is 17 MB). */
const MAX_TOKENIZER_JSON_BYTES = 256 << 20;

const SPECIAL_TYPES = ['bos', 'eos', 'unk', 'sep', 'pad', 'cls', 'mask'] as const;

function charsmapOf(normalizer: any): Uint8Array | undefined {
  if (normalizer?.type === 'Precompiled' && typeof normalizer.precompiled_charsmap === 'string') return Buffer.from(normalizer.precompiled_charsmap, 'base64');
  if (normalizer?.type === 'Sequence' && Array.isArray(normalizer.normalizers)) {
    for (const n of normalizer.normalizers) {
      const found = charsmapOf(n);
      if (found) return found;
    }
  }
  return undefined;
}

function addPrefixOf(pre: any): boolean {
  if (pre?.type === 'Sequence' && Array.isArray(pre.pretokenizers)) return pre.pretokenizers.some(addPrefixOf);
  if (pre?.type !== 'Metaspace') return false;
  if (typeof pre.prepend_scheme === 'string') return pre.prepend_scheme !== 'never';
  return pre.add_prefix_space !== false;
}

/** The folder's GGUF UGM vocabulary, or undefined when its tokenizer.json is no Unigram one (or absent). */
export function ugmVocabularyFromHfFolder(dir: string, hfConfig: HfJson | undefined): Gguf | undefined {
  const file = nodePath.join(dir, 'tokenizer.json');
  const stat = fs.statSync(file, { throwIfNoEntry: false });
  if (!stat) return undefined;
  if (stat.size > MAX_TOKENIZER_JSON_BYTES) fail('BAD_HEADER', 'tokenizer.json is too large to be a tokenizer', { path: file, expected: `<= ${MAX_TOKENIZER_JSON_BYTES} bytes`, found: stat.size });
  let json: any;
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(fs.readFileSync(file)));
  } catch (cause) {
    return fail('BAD_HEADER', `not valid UTF-8 JSON: ${(cause as Error).message}`, { path: file });
  }
  runNow(validateTokenizerJsonSteps(json, file));
  if (json.model?.type !== 'Unigram') return undefined;
  const configFile = nodePath.join(dir, 'tokenizer_config.json');
  const tc: HfJson = fs.existsSync(configFile) ? (readJsonFile(configFile) as HfJson) : {};
  const pieces: [string, number][] = json.model.vocab;
  const want = typeof hfConfig?.vocab_size === 'number' && Number.isInteger(hfConfig.vocab_size) ? hfConfig.vocab_size : 0;
  const n = Math.max(want, pieces.length);
  if (n > MAX_TOKEN_ID) fail('CONFIG_MISMATCH', 'vocab_size is out of range', { path: file, expected: `<= ${MAX_TOKEN_ID}`, found: n });
  const tokens = Array.from({ length: n }, (_, i) => (i < pieces.length ? pieces[i][0] : `[PAD${i}]`));
  const scores = Float32Array.from({ length: n }, (_, i) => (i < pieces.length ? pieces[i][1] : -10000));
  const types = Int32Array.from({ length: n }, (_, i) => (i < pieces.length ? TOKEN_NORMAL : TOKEN_UNUSED));
  const added: { id: number; content: string; special: boolean }[] = Array.isArray(json.added_tokens) ? json.added_tokens : [];
  for (const a of added) {
    if (!(a.id >= 0 && a.id < n)) fail('BAD_HEADER', `added token ${JSON.stringify(a.content)} has an id outside the vocabulary`, { path: file, expected: `< ${n}`, found: a.id });
    tokens[a.id] = a.content;
    types[a.id] = a.special ? TOKEN_CONTROL : TOKEN_USER_DEFINED;
  }
  // llama.cpp asserts that no token string repeats (its id -> token and token -> id maps must match).
  const seen = new Map<string, number>();
  tokens.forEach((t, id) => {
    const before = seen.get(t);
    if (before !== undefined) throw new UnsupportedError(`${file}: token ${JSON.stringify(t)} is listed at ids ${before} and ${id}; a GGUF vocabulary (llama.cpp) holds each token once`);
    seen.set(t, id);
  });
  const unk = json.model.unk_id;
  if (typeof unk === 'number' && unk >= 0 && unk < n) types[unk] = TOKEN_UNKNOWN;

  const out: Gguf = {
    kind: 'gguf', model: 't5', pre: 'default', tokens, scores, tokenTypes: types,
    addSpacePrefix: addPrefixOf(json.pre_tokenizer),
    removeExtraWhitespaces: tc.clean_up_tokenization_spaces !== false,
  };
  const charsmap = charsmapOf(json.normalizer);
  if (charsmap) out.precompiledCharsmap = charsmap;
  const field: Record<(typeof SPECIAL_TYPES)[number], 'bosId' | 'eosId' | 'unkId' | 'sepId' | 'padId' | 'clsId' | 'maskId'> = { bos: 'bosId', eos: 'eosId', unk: 'unkId', sep: 'sepId', pad: 'padId', cls: 'clsId', mask: 'maskId' };
  for (const type of SPECIAL_TYPES) {
    const entry = tc[`${type}_token`] as unknown;
    const content = typeof entry === 'string' ? entry : typeof (entry as any)?.content === 'string' ? (entry as any).content : undefined;
    const fromAdded = content === undefined ? undefined : added.find((a) => a.content === content)?.id;
    const fromConfig = hfConfig?.[`${type}_token_id`];
    const id = fromAdded ?? (typeof fromConfig === 'number' && Number.isInteger(fromConfig) && fromConfig >= 0 && fromConfig < n ? fromConfig : undefined);
    if (id !== undefined) out[field[type]] = id;
  }
  const processors: any[] = json.post_processor?.type === 'Sequence' ? json.post_processor.processors ?? [] : json.post_processor ? [json.post_processor] : [];
  for (const p of processors) {
    if (p?.type === 'RobertaProcessing') {
      out.addBos = true;
      out.addEos = true;
    } else if (p?.type === 'TemplateProcessing' && Array.isArray(p.single) && p.single.length > 1) {
      const idOf = (t: any) => (typeof t?.SpecialToken?.id === 'string' ? added.find((a) => a.content === t.SpecialToken.id)?.id : undefined);
      const first = idOf(p.single[0]);
      const last = idOf(p.single[p.single.length - 1]);
      out.addBos = first !== undefined && (first === out.bosId || first === out.clsId);
      out.addEos = last !== undefined && last === out.eosId;
    }
  }
  if (typeof tc.add_bos_token === 'boolean') out.addBos = tc.add_bos_token;
  if (typeof tc.add_eos_token === 'boolean') out.addEos = tc.add_eos_token;
  if (out.addBos && out.bosId === undefined) throw new UnsupportedError(`${file} adds a BOS token but names none`);
  if (out.addEos && out.eosId === undefined) throw new UnsupportedError(`${file} adds an EOS token but names none`);
  return out;
}
