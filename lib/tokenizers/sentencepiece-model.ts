/**
 * SentencePiece `.model` files (a ModelProto, protobuf) read with a small bounded reader of the
 * fields a tokenizer needs, and converted to the tokenizer.json Hugging Face's converter would
 * write for a Unigram model. Every length is checked against the bytes left before it is used,
 * the piece count is bounded (MAX_TOKEN_ID) before a piece is kept, and each failure is a
 * WeightFormatError naming the byte offset.
 *
 * The conversion (transformers' SpmConverter, made to follow the normalizer spec's flags):
 * normalizer Precompiled (when there is a charsmap), then, when `remove_extra_whitespaces`,
 * Strip(right) and runs of two or more spaces -> ▁ (sentencepiece drops leading, trailing and
 * repeated whitespace as it normalizes); Metaspace, prepending ▁ when `add_dummy_prefix`; the
 * control and unknown pieces as special added tokens, the user-defined ones as plain added
 * tokens; the decoder Metaspace, or with byte fallback Replace(▁ -> space), ByteFallback, Fuse and
 * Strip of the dummy prefix's space.
 */
import { UnsupportedError, WeightFormatError } from '../base/errors';
import { MAX_TOKEN_ID } from './validate-json';
import { tokenizerFromJsonSteps } from './hf-json';
import type { Steps } from '../base/steps';
import type { Tokenizer } from './types';
import type { TokenizerData } from '../addon/weights';

/** SentencePiece's piece types (ModelProto.SentencePiece.Type). */
export const SPM_NORMAL = 1;
export const SPM_UNKNOWN = 2;
export const SPM_CONTROL = 3;
export const SPM_USER_DEFINED = 4;
export const SPM_UNUSED = 5;
export const SPM_BYTE = 6;

export interface SentencePiece {
  piece: string;
  score: number;
  type: number;
}

/** The fields of a ModelProto that a tokenizer uses. */
export interface SentencePieceModel {
  pieces: SentencePiece[];
  /** TrainerSpec.model_type: 1 unigram, 2 BPE, 3 word, 4 char. */
  algorithm: number;
  byteFallback: boolean;
  unkId: number;
  bosId: number;
  eosId: number;
  padId: number;
  treatWhitespaceAsSuffix: boolean;
  precompiledCharsmap: Uint8Array;
  addDummyPrefix: boolean;
  removeExtraWhitespaces: boolean;
  escapeWhitespaces: boolean;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

class Reader {
  at: number;
  constructor(
    readonly bytes: Uint8Array,
    readonly where: string,
    readonly start: number,
    readonly end: number,
  ) {
    this.at = start;
  }

  fail(what: string, found?: unknown): never {
    throw new WeightFormatError('BAD_HEADER', `SentencePiece model: ${what}`, { path: this.where, offset: this.at, found });
  }

  /** A varint as the low 32 bits, signed (int32 fields hold -1 as ten bytes) and unsigned. */
  varint(): number {
    let low = 0;
    for (let i = 0; i < 10; i++) {
      if (this.at >= this.end) this.fail('a varint runs past the end of its message');
      const b = this.bytes[this.at++];
      if (i < 5) low |= (b & 0x7f) << (7 * i);
      if ((b & 0x80) === 0) return low;
    }
    return this.fail('a varint longer than ten bytes');
  }

  length(): number {
    const n = this.varint() >>> 0;
    if (n > this.end - this.at) this.fail('a field runs past the end of its message', n);
    return n;
  }

  /** Calls `field(number, wireType)` for each field; the callback reads the value or returns false to have it skipped. */
  fields(field: (n: number, wire: number) => boolean): void {
    while (this.at < this.end) {
      const key = this.varint() >>> 0;
      const n = key >>> 3;
      const wire = key & 7;
      if (n === 0) this.fail('field number 0');
      if (field(n, wire)) continue;
      if (wire === 0) this.varint();
      else if (wire === 1) this.skip(8);
      else if (wire === 2) this.skip(this.length());
      else if (wire === 5) this.skip(4);
      else this.fail('an unsupported wire type', wire);
    }
  }

  skip(n: number): void {
    if (n > this.end - this.at) this.fail('a field runs past the end of its message', n);
    this.at += n;
  }

  sub(): Reader {
    const n = this.length();
    const r = new Reader(this.bytes, this.where, this.at, this.at + n);
    this.at += n;
    return r;
  }

  string(): string {
    const n = this.length();
    try {
      return utf8.decode(this.bytes.subarray(this.at, this.at + n));
    } catch {
      return this.fail('a string is not valid UTF-8');
    } finally {
      this.at += n;
    }
  }

  float(): number {
    if (this.end - this.at < 4) this.fail('a float runs past the end of its message');
    const v = new DataView(this.bytes.buffer, this.bytes.byteOffset + this.at, 4).getFloat32(0, true);
    this.at += 4;
    return v;
  }

  expect(wire: number, want: number, field: string): void {
    if (wire !== want) this.fail(`${field} has wire type ${wire}, not ${want}`);
  }
}

/** Reads a `.model` file's bytes. */
export function readSentencePieceModel(bytes: Uint8Array, where: string): SentencePieceModel {
  const model: SentencePieceModel = {
    pieces: [],
    algorithm: 1,
    byteFallback: false,
    unkId: 0,
    bosId: 1,
    eosId: 2,
    padId: -1,
    treatWhitespaceAsSuffix: false,
    precompiledCharsmap: new Uint8Array(0),
    addDummyPrefix: true,
    removeExtraWhitespaces: true,
    escapeWhitespaces: true,
  };
  const top = new Reader(bytes, where, 0, bytes.length);
  top.fields((n, wire) => {
    if (n === 1) {
      top.expect(wire, 2, 'pieces');
      if (model.pieces.length >= MAX_TOKEN_ID) top.fail(`more than ${MAX_TOKEN_ID} pieces`);
      const r = top.sub();
      const p: SentencePiece = { piece: '', score: 0, type: SPM_NORMAL };
      r.fields((m, w) => {
        if (m === 1) (r.expect(w, 2, 'piece'), (p.piece = r.string()));
        else if (m === 2) (r.expect(w, 5, 'score'), (p.score = r.float()));
        else if (m === 3) (r.expect(w, 0, 'type'), (p.type = r.varint()));
        else return false;
        return true;
      });
      if (p.type < SPM_NORMAL || p.type > SPM_BYTE) r.fail(`piece ${model.pieces.length} has an unknown type`, p.type);
      if (!Number.isFinite(p.score)) r.fail(`piece ${model.pieces.length} has a score that is not finite`, p.score);
      model.pieces.push(p);
      return true;
    }
    if (n === 2) {
      top.expect(wire, 2, 'trainer_spec');
      const r = top.sub();
      r.fields((m, w) => {
        const flag = (set: (v: number) => void) => (r.expect(w, 0, `trainer_spec field ${m}`), set(r.varint()), true);
        if (m === 3) return flag((v) => (model.algorithm = v));
        if (m === 35) return flag((v) => (model.byteFallback = v !== 0));
        if (m === 40) return flag((v) => (model.unkId = v));
        if (m === 41) return flag((v) => (model.bosId = v));
        if (m === 42) return flag((v) => (model.eosId = v));
        if (m === 43) return flag((v) => (model.padId = v));
        if (m === 24) return flag((v) => (model.treatWhitespaceAsSuffix = v !== 0));
        return false;
      });
      return true;
    }
    if (n === 3) {
      top.expect(wire, 2, 'normalizer_spec');
      const r = top.sub();
      r.fields((m, w) => {
        const flag = (set: (v: boolean) => void) => (r.expect(w, 0, `normalizer_spec field ${m}`), set(r.varint() !== 0), true);
        if (m === 2) {
          r.expect(w, 2, 'precompiled_charsmap');
          const len = r.length();
          model.precompiledCharsmap = bytes.slice(r.at, r.at + len);
          r.at += len;
          return true;
        }
        if (m === 3) return flag((v) => (model.addDummyPrefix = v));
        if (m === 4) return flag((v) => (model.removeExtraWhitespaces = v));
        if (m === 5) return flag((v) => (model.escapeWhitespaces = v));
        return false;
      });
      return true;
    }
    return false;
  });
  if (model.pieces.length === 0) throw new WeightFormatError('BAD_HEADER', 'SentencePiece model: no pieces', { path: where });
  return model;
}

/** The tokenizer.json (as an object) of a Unigram `.model`. */
export function sentencePieceModelToTokenizerJson(model: SentencePieceModel, where: string): any {
  if (model.algorithm !== 1) throw new UnsupportedError(`SentencePiece model type ${model.algorithm} is not Unigram (1); only Unigram models convert`);
  if (model.treatWhitespaceAsSuffix) throw new UnsupportedError('SentencePiece models with treat_whitespace_as_suffix are not supported');
  if (!model.escapeWhitespaces) throw new UnsupportedError('SentencePiece models without escape_whitespaces are not supported');
  const unk = model.pieces.findIndex((p) => p.type === SPM_UNKNOWN);
  if (unk < 0) throw new WeightFormatError('BAD_HEADER', 'SentencePiece model: no unknown piece', { path: where });
  const seen = new Set<string>();
  model.pieces.forEach((p, id) => {
    if (p.piece === '') throw new WeightFormatError('BAD_HEADER', `SentencePiece model: piece ${id} is empty`, { path: where });
    if (seen.has(p.piece)) throw new WeightFormatError('BAD_HEADER', `SentencePiece model: piece ${id} (${JSON.stringify(p.piece)}) is defined twice`, { path: where });
    seen.add(p.piece);
  });
  const normalizers: unknown[] = [];
  if (model.precompiledCharsmap.length > 0) normalizers.push({ type: 'Precompiled', precompiled_charsmap: Buffer.from(model.precompiledCharsmap).toString('base64') });
  if (model.removeExtraWhitespaces) {
    normalizers.push({ type: 'Strip', strip_left: false, strip_right: true }, { type: 'Replace', pattern: { Regex: ' {2,}' }, content: '▁' });
  }
  const prepend = model.addDummyPrefix ? 'always' : 'never';
  const added = model.pieces.flatMap((p, id) =>
    p.type === SPM_CONTROL || p.type === SPM_UNKNOWN || p.type === SPM_USER_DEFINED
      ? [{ id, content: p.piece, single_word: false, lstrip: false, rstrip: false, normalized: false, special: p.type !== SPM_USER_DEFINED }]
      : [],
  );
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: normalizers.length === 0 ? null : { type: 'Sequence', normalizers },
    pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: prepend, split: true },
    post_processor: null,
    decoder: model.byteFallback
      ? {
          type: 'Sequence',
          decoders: [
            { type: 'Replace', pattern: { String: '▁' }, content: ' ' },
            { type: 'ByteFallback' },
            { type: 'Fuse' },
            ...(model.addDummyPrefix ? [{ type: 'Strip', content: ' ', start: 1, stop: 0 }] : []),
          ],
        }
      : { type: 'Metaspace', replacement: '▁', prepend_scheme: prepend, split: true },
    model: { type: 'Unigram', unk_id: unk, vocab: model.pieces.map((p) => [p.piece, p.score]), byte_fallback: model.byteFallback },
  };
}

/**
 * The GGUF UGM vocabulary (`tokenizer.ggml.model` "t5") of a Unigram `.model`, as llama.cpp's
 * converter writes T5's (its piece types are llama.cpp's token types, the same numbers): no BOS
 * or EOS added (the caller sets addBos/addEos as the model family wants).
 */
export function sentencePieceModelToGgufVocab(model: SentencePieceModel, where: string): Extract<TokenizerData, { kind: 'gguf' }> {
  if (model.algorithm !== 1) throw new UnsupportedError(`SentencePiece model type ${model.algorithm} is not Unigram (1); only Unigram models convert`);
  if (model.treatWhitespaceAsSuffix || !model.escapeWhitespaces) throw new UnsupportedError('llama.cpp UGM vocabularies escape whitespace as a prefix ▁ only');
  const id = (v: number) => (v >= 0 && v < model.pieces.length ? v : undefined);
  if (id(model.unkId) === undefined) throw new WeightFormatError('BAD_HEADER', 'SentencePiece model: no unknown piece', { path: where });
  const out: Extract<TokenizerData, { kind: 'gguf' }> = {
    kind: 'gguf',
    model: 't5',
    tokens: model.pieces.map((p) => p.piece),
    scores: Float32Array.from(model.pieces, (p) => p.score),
    tokenTypes: Int32Array.from(model.pieces, (p) => p.type),
    unkId: model.unkId,
    addBos: false,
    addEos: false,
    addSpacePrefix: model.addDummyPrefix,
    removeExtraWhitespaces: model.removeExtraWhitespaces,
    precompiledCharsmap: model.precompiledCharsmap,
  };
  if (id(model.bosId) !== undefined) out.bosId = model.bosId;
  if (id(model.eosId) !== undefined) out.eosId = model.eosId;
  if (id(model.padId) !== undefined) out.padId = model.padId;
  return out;
}

/** The tokenizer of a Unigram `.model` file's bytes (converted as above; `config`: a tokenizer_config.json beside it). */
export function* tokenizerFromSentencePieceModelSteps(bytes: Uint8Array, where: string, config?: unknown): Steps<Tokenizer> {
  const json = sentencePieceModelToTokenizerJson(readSentencePieceModel(bytes, where), where);
  yield;
  return yield* tokenizerFromJsonSteps(json, where, config);
}
