/**
 * Structural validation of Hugging Face tokenizer files before anything is built from them, with
 * the rules Hugging Face's tokenizers library applies when it deserializes them: `model.vocab`
 * maps token strings to ids (an object, never null or a list), an id is an unsigned integer
 * (never −1, 1.5, "x" or 1e300), no two vocabulary tokens share an id, and every added token has
 * string content and an id. Ids are further bounded by MAX_TOKEN_ID, so that a vocabulary of a
 * few entries cannot claim 2^31 ids (which would make every table built per id that large).
 * Each failure is a WeightFormatError that names the file and the JSON path of the bad value.
 */
import { WeightFormatError } from '../base/errors';
import type { Steps } from '../base/steps';

/** Ids at or above this are refused: the largest real vocabularies have ~2^18 entries. */
export const MAX_TOKEN_ID = 1 << 24;

/** Entries checked between two checkpoints (well under a millisecond; see steps.ts). */
const SLICE = 2048;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'string' ? JSON.stringify(v).slice(0, 40) : typeof v === 'object' ? 'an object' : String(v);
}

/** `$.model.vocab["the"]`: a JSON path with the key quoted as JSON. */
function member(path: string, key: string): string {
  return `${path}[${JSON.stringify(key)}]`;
}

function bad(file: string, jsonPath: string, what: string, expected: string, found: unknown): never {
  throw new WeightFormatError('BAD_HEADER', `${jsonPath} ${what}`, { path: file, expected, found: kindOf(found) });
}

function isTokenId(id: unknown): id is number {
  return typeof id === 'number' && Number.isInteger(id) && id >= 0 && id < MAX_TOKEN_ID;
}

/** Throws unless `id` is an integer token id in [0, MAX_TOKEN_ID). */
export function checkTokenId(id: unknown, file: string, jsonPath: string): number {
  if (!isTokenId(id)) {
    bad(file, jsonPath, 'is not a token id', `an integer in [0, ${MAX_TOKEN_ID})`, id);
  }
  return id;
}

/**
 * A `{token: id}` vocabulary (tokenizer.json's model.vocab, vocab.json): an object of valid ids,
 * no id given to two tokens. Returns the number of entries.
 */
export function* validateVocabSteps(vocab: unknown, file: string, jsonPath: string): Steps<number> {
  if (!isObject(vocab)) bad(file, jsonPath, 'is not an object of token -> id', 'an object', vocab);
  const owner = new Map<number, string>();
  let n = 0;
  for (const token in vocab) {
    // The entry's JSON path is made only for an error (10^5 of them would be garbage).
    const value = vocab[token];
    const id = isTokenId(value) ? value : checkTokenId(value, file, member(jsonPath, token));
    const other = owner.get(id);
    if (other !== undefined) {
      throw new WeightFormatError('BAD_HEADER', `${member(jsonPath, token)} and ${member(jsonPath, other)} share the id ${id}`, {
        path: file,
        expected: 'one token per id',
        found: `id ${id} twice`,
      });
    }
    owner.set(id, token);
    if (++n % SLICE === 0) yield;
  }
  return n;
}

/** tokenizer.json's `added_tokens`: a list of objects with string content and distinct valid ids. */
function validateAddedTokens(added: unknown, file: string): void {
  if (added === undefined || added === null) return;
  if (!Array.isArray(added)) bad(file, '$.added_tokens', 'is not a list', 'a list', added);
  const owner = new Map<number, number>();
  added.forEach((entry: unknown, i) => {
    const at = `$.added_tokens[${i}]`;
    if (!isObject(entry)) bad(file, at, 'is not an object', 'an object', entry);
    if (typeof entry.content !== 'string') bad(file, `${at}.content`, 'is not a string', 'a string', entry.content);
    const id = checkTokenId(entry.id, file, `${at}.id`);
    const other = owner.get(id);
    if (other !== undefined) {
      throw new WeightFormatError('BAD_HEADER', `${at} and $.added_tokens[${other}] share the id ${id}`, { path: file, expected: 'one added token per id', found: `id ${id} twice` });
    }
    owner.set(id, i);
  });
}

/**
 * Validates a parsed tokenizer.json: a `model` object, its vocabulary (for the models whose
 * vocabulary is a token -> id map: BPE, WordPiece, WordLevel) and `added_tokens`.
 */
export function* validateTokenizerJsonSteps(json: unknown, file: string): Steps<void> {
  if (!isObject(json)) bad(file, '$', 'is not an object', 'an object', json);
  const model = json.model;
  if (!isObject(model)) bad(file, '$.model', 'is not an object', 'an object', model);
  if (model.type !== undefined && typeof model.type !== 'string') bad(file, '$.model.type', 'is not a string', 'a string', model.type);
  // Unigram's vocab is a list of [piece, score]; every other model's a map.
  if (model.type !== 'Unigram' && (model.vocab !== undefined || model.type !== undefined)) {
    yield* validateVocabSteps(model.vocab, file, '$.model.vocab');
  }
  if (model.type === 'Unigram') yield* validateUnigramModelSteps(model, file);
  if (model.merges !== undefined && !Array.isArray(model.merges)) bad(file, '$.model.merges', 'is not a list', 'a list', model.merges);
  validateAddedTokens(json.added_tokens, file);
}

const LONE_SURROGATE = /\p{Cs}/u;

/**
 * A Unigram model: `vocab` a non-empty list (of at most MAX_TOKEN_ID entries, checked before
 * anything is built per entry) of [piece, score] with a piece of well-formed UTF-16 (serde refuses
 * lone surrogates) and a finite score; `unk_id` absent, null or an index into it; `byte_fallback`
 * a boolean when given.
 */
function* validateUnigramModelSteps(model: Record<string, unknown>, file: string): Steps<void> {
  const vocab = model.vocab;
  if (!Array.isArray(vocab)) bad(file, '$.model.vocab', 'is not a list of [piece, score]', 'a list', vocab);
  if (vocab.length === 0) bad(file, '$.model.vocab', 'is empty', 'at least one piece', 'an empty list');
  if (vocab.length > MAX_TOKEN_ID) bad(file, '$.model.vocab', 'has too many pieces', `at most ${MAX_TOKEN_ID}`, `${vocab.length} pieces`);
  for (let i = 0; i < vocab.length; i++) {
    const entry = vocab[i];
    if (!Array.isArray(entry) || entry.length !== 2) bad(file, `$.model.vocab[${i}]`, 'is not a [piece, score] pair', '[string, number]', entry);
    if (typeof entry[0] !== 'string' || LONE_SURROGATE.test(entry[0])) bad(file, `$.model.vocab[${i}][0]`, 'is not a piece', 'a well-formed string', entry[0]);
    if (typeof entry[1] !== 'number' || !Number.isFinite(entry[1])) bad(file, `$.model.vocab[${i}][1]`, 'is not a score', 'a finite number', entry[1]);
    if (i % SLICE === SLICE - 1) yield;
  }
  const unk = model.unk_id;
  if (unk !== undefined && unk !== null && !(typeof unk === 'number' && Number.isInteger(unk) && unk >= 0 && unk < vocab.length)) {
    bad(file, '$.model.unk_id', 'is not an index into the vocabulary', `an integer in [0, ${vocab.length})`, unk);
  }
  if (model.byte_fallback !== undefined && typeof model.byte_fallback !== 'boolean') bad(file, '$.model.byte_fallback', 'is not a boolean', 'a boolean', model.byte_fallback);
}

/** tokenizer_config.json's `added_tokens_decoder`: `{"<id>": {content, ...}}` with decimal ids in range. */
export function validateAddedTokensDecoder(config: unknown, file: string): void {
  if (!isObject(config) || config.added_tokens_decoder === undefined) return;
  const decoder = config.added_tokens_decoder;
  if (!isObject(decoder)) bad(file, '$.added_tokens_decoder', 'is not an object of id -> token', 'an object', decoder);
  for (const [key, entry] of Object.entries(decoder)) {
    const at = member('$.added_tokens_decoder', key);
    checkTokenId(/^(0|[1-9][0-9]*)$/.test(key) ? Number(key) : key, file, at);
    if (!isObject(entry) || typeof entry.content !== 'string') bad(file, `${at}.content`, 'is not a string', 'a string', isObject(entry) ? entry.content : entry);
  }
}
