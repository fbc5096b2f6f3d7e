/**
 * A GGUF UGM vocabulary (`tokenizer.ggml.model` "t5") -> UgmTokenizer, with llama.cpp's defaults
 * for the keys a file leaves out (unknown id 2, EOS 1, PAD 0, no BOS; add_eos_token true,
 * add_bos_token false; add_space_prefix and remove_extra_whitespaces false) and its token
 * attributes (`<mask>` strips the spaces before it in nomic-bert-moe, jina-bert-v3 and the
 * jina-v2-de/es/code vocabularies).
 */
import { UnsupportedError, WeightFormatError } from '../base/errors';
import type { TokenizerData } from '../addon/weights';
import type { Steps } from '../base/steps';
import type { AddedToken } from './added-tokens';
import { MapVocab } from './bpe-vocab';
import { TOKEN_CONTROL, TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_UNUSED, TOKEN_USER_DEFINED } from './token-types';
import { UgmTokenizer, ugmCutOrder } from './ugm';
import { buildUnigramTrieSteps, K_UNK_PENALTY } from './unigram-model';
import { MAX_TOKEN_ID } from './validate-json';

type Gguf = Extract<TokenizerData, { kind: 'gguf' }>;

const FLT_MAX = 3.4028234663852886e38;

const MASK_LSTRIP_ARCHITECTURES = ['nomic-bert-moe', 'jina-bert-v3'];
const MASK_LSTRIP_PRE = ['jina-v2-de', 'jina-v2-es', 'jina-v2-code'];

export function* ugmFromGgufSteps(data: Gguf, where: string): Steps<UgmTokenizer> {
  const tokens = data.tokens;
  const n = tokens.length;
  const bad = (what: string, details: { expected?: unknown; found?: unknown } = {}): never => {
    throw new WeightFormatError('BAD_HEADER', `UGM vocabulary: ${what}`, { path: where, ...details });
  };
  if (n === 0 || n > MAX_TOKEN_ID) bad('token count out of range', { expected: `1..${MAX_TOKEN_ID}`, found: n });
  if (!data.scores) bad('tokenizer.ggml.scores is missing');
  const scores32 = data.scores!;
  const types = new Uint8Array(n).fill(TOKEN_NORMAL);
  if (data.tokenTypes) {
    for (let id = 0; id < n; id++) {
      const t = data.tokenTypes[id];
      if (!(t >= 1 && t <= 6)) bad(`token ${id} has type ${t}`, { expected: '1..6', found: t });
      types[id] = t;
    }
  }
  const unkId = data.unkId ?? 2;
  if (unkId >= n) throw new UnsupportedError(`the UGM vocabulary has no unknown token (id ${unkId} of ${n})`);
  const eosId = data.eosId ?? (n > 1 ? 1 : undefined);
  const bosId = data.bosId;
  const padId = data.padId ?? 0;
  const addBos = data.addBos ?? false;
  const addEos = data.addEos ?? true;
  if (addBos && bosId === undefined) bad('add_bos_token is set but there is no BOS token');
  if (addEos && eosId === undefined) bad('add_eos_token is set but there is no EOS token');

  const scores = new Float64Array(n);
  let min = FLT_MAX;
  for (let id = 0; id < n; id++) {
    const s = scores32[id];
    if (!Number.isFinite(s)) bad(`token ${id}'s score is not finite`, { found: s });
    scores[id] = types[id] === TOKEN_USER_DEFINED ? 0 : s;
    if (types[id] === TOKEN_NORMAL && s < min) min = s;
  }
  yield;
  const vocab = MapVocab.fromTokens(tokens);
  const trie = yield* buildUnigramTrieSteps(vocab, (id) => types[id] === TOKEN_NORMAL || types[id] === TOKEN_USER_DEFINED || types[id] === TOKEN_UNUSED);

  const maskLstrip = MASK_LSTRIP_ARCHITECTURES.some((a) => data.architecture?.includes(a)) || MASK_LSTRIP_PRE.some((p) => data.pre?.includes(p));
  const cut: AddedToken[] = [];
  for (let id = 0; id < n; id++) {
    const type = types[id];
    if (type !== TOKEN_CONTROL && type !== TOKEN_USER_DEFINED && type !== TOKEN_UNKNOWN) continue;
    const content = tokens[id];
    cut.push({ id, content, special: type !== TOKEN_USER_DEFINED, singleWord: false, lstrip: maskLstrip && content === '<mask>', rstrip: false, normalized: false });
  }
  const specialIds = { unk: unkId, pad: padId < n ? padId : undefined, bos: bosId, eos: eosId, sep: data.sepId, cls: data.clsId, mask: data.maskId };
  for (const key of Object.keys(specialIds) as (keyof typeof specialIds)[]) if (specialIds[key] === undefined) delete specialIds[key];
  return new UgmTokenizer({
    vocab,
    types,
    scores,
    trie,
    unkId,
    unkScore: Math.fround(min - K_UNK_PENALTY),
    charsmap: data.precompiledCharsmap && data.precompiledCharsmap.length > 0 ? Buffer.from(data.precompiledCharsmap).toString('base64') : null,
    addSpacePrefix: data.addSpacePrefix ?? false,
    removeExtraWhitespaces: data.removeExtraWhitespaces ?? false,
    addedTokens: ugmCutOrder(cut),
    specialIds,
    wrapping: { prefix: addBos ? [bosId!] : [], suffix: addEos ? [eosId!] : [] },
    where,
  });
}
