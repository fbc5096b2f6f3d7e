/**
 * loadTokenizer(path): finds and reads a tokenizer from
 *  - a tokenizer.json (with tokenizer_config.json beside it, if any),
 *  - a folder holding tokenizer.json, vocab.json + merges.txt, vocab.txt + merges.txt (TLLM),
 *    vocab.txt (BERT), tokenizer.bin, or a single *.tokenizer,
 *  - an ajc1 `.tokenizer`, a llama2.c tokenizer.bin, a GGUF file (its tokenizer.ggml.* metadata).
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { WeightFormatError } from '../errors';
import { parseAjc1Tokenizer } from '../formats/ajc1';
import { readLlama2cTokenizer } from '../formats/llama2c';
import { fail } from '../formats/bytes';
import { tokenizerFromData, tokenizerFromDataSteps } from './from-data';
import { readGgufTokenizerData } from './gguf-vocab';
import { tokenizerFromJsonSteps, tokenizerFromVocabMergesSteps } from './hf-json';
import { runNow, runYielding, type Steps } from './steps';
import { TllmTokenizer } from './tllm';
import type { TokenizerData } from '../weights';
import type { Tokenizer } from './types';

function readJson(path: string): any {
  const text = fs.readFileSync(path, 'utf8');
  try {
    return JSON.parse(text);
  } catch (e) {
    return fail('BAD_HEADER', `not valid JSON: ${(e as Error).message}`, { path });
  }
}

function optionalJson(path: string): any {
  return fs.existsSync(path) ? readJson(path) : undefined;
}

/** Number of `f32 score, u32 len, bytes` entries after the 12-byte header of a `.tokenizer`. */
function countAjc1Entries(bytes: Buffer, path: string): number {
  if (bytes.length < 12) fail('TRUNCATED', 'the file ends inside the .tokenizer header', { path, offset: 0, expected: '12 bytes', found: `${bytes.length} bytes` });
  let at = 12;
  let n = 0;
  while (at < bytes.length) {
    const end = at + 8 > bytes.length ? at + 8 : at + 8 + bytes.readUInt32LE(at + 4);
    if (end > bytes.length) {
      fail('TRUNCATED', `the file ends inside token ${n}`, { path, offset: at, expected: `${end - at} bytes`, found: `${bytes.length - at} bytes` });
    }
    at = end;
    n++;
  }
  return n;
}

/** An ajc1 `.tokenizer` read on its own (no checkpoint to give vocab_size). */
export function loadAjc1Tokenizer(path: string): Tokenizer {
  return tokenizerFromData(readAjc1TokenizerData(path), path);
}

function readAjc1TokenizerData(path: string): TokenizerData {
  const bytes = fs.readFileSync(path);
  return parseAjc1Tokenizer(bytes, path, countAjc1Entries(bytes, path));
}

/** BERT vocab.txt: one token per line, id = line index (HF WordPiece::read_file trims line ends). */
export function wordPieceFromVocabTxt(path: string, config?: any): Tokenizer {
  const lines = fs.readFileSync(path, 'utf8').split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const tokens = lines.map((l) => l.replace(/\s+$/u, ''));
  const find = (name: string) => {
    const i = tokens.lastIndexOf(name);
    return i < 0 ? undefined : i;
  };
  const unk = find('[UNK]');
  if (unk === undefined) fail('BAD_HEADER', 'vocab.txt has no [UNK] token', { path });
  return tokenizerFromData(
    {
      kind: 'wordpiece',
      tokens,
      specialIds: { pad: find('[PAD]')!, unk, cls: find('[CLS]')!, sep: find('[SEP]')!, mask: find('[MASK]')! },
      doLowerCase: config?.do_lower_case !== false,
    },
    path,
  );
}

function* fromFolder(dir: string): Steps<Tokenizer> {
  const at = (name: string) => nodePath.join(dir, name);
  const has = (name: string) => fs.existsSync(at(name));
  const config = optionalJson(at('tokenizer_config.json'));
  if (has('tokenizer.json')) return yield* tokenizerFromJsonSteps(readJson(at('tokenizer.json')), at('tokenizer.json'), config);
  if (has('vocab.json') && has('merges.txt')) {
    const vocab = readJson(at('vocab.json'));
    yield;
    return yield* tokenizerFromVocabMergesSteps(vocab, fs.readFileSync(at('merges.txt'), 'utf8'), config, dir);
  }
  if (has('vocab.txt') && has('merges.txt')) return new TllmTokenizer(fs.readFileSync(at('vocab.txt')), fs.readFileSync(at('merges.txt')));
  if (has('vocab.txt')) return wordPieceFromVocabTxt(at('vocab.txt'), config);
  if (has('tokenizer.bin')) return tokenizerFromData(readLlama2cTokenizer(at('tokenizer.bin')), at('tokenizer.bin'));
  const ajc1 = fs.readdirSync(dir).filter((f) => f.endsWith('.tokenizer'));
  if (ajc1.length === 1) return yield* tokenizerFromDataSteps(readAjc1TokenizerData(at(ajc1[0])), at(ajc1[0]));
  throw new WeightFormatError('BAD_HEADER', 'no tokenizer files found (tokenizer.json, vocab.json + merges.txt, vocab.txt, tokenizer.bin, *.tokenizer)', { path: dir });
}

function startsWithGguf(path: string): boolean {
  const fd = fs.openSync(path, 'r');
  try {
    const head = Buffer.alloc(4);
    return fs.readSync(fd, head, 0, 4, 0) === 4 && head.toString('latin1') === 'GGUF';
  } finally {
    fs.closeSync(fd);
  }
}

/** Synchronous loadTokenizer. */
export function loadTokenizerSync(path: string): Tokenizer {
  return runNow(load(path));
}

/**
 * Reads the tokenizer at `path` (a file or a folder; see the module comment). Large vocabularies
 * are built in slices that let the event loop run in between (steps.ts).
 */
export function loadTokenizer(path: string): Promise<Tokenizer> {
  return runYielding(load(path));
}

function* load(path: string): Steps<Tokenizer> {
  const stat = fs.statSync(path);
  if (stat.isDirectory()) return yield* fromFolder(path);
  const base = nodePath.basename(path);
  if (startsWithGguf(path)) {
    return tokenizerFromData(readGgufTokenizerData(path), path);
  }
  if (base.endsWith('.json')) {
    const json = readJson(path);
    if (json && typeof json === 'object' && 'model' in json) {
      yield;
      return yield* tokenizerFromJsonSteps(json, path, optionalJson(nodePath.join(nodePath.dirname(path), 'tokenizer_config.json')));
    }
    return yield* fromFolder(nodePath.dirname(path));
  }
  if (base.endsWith('.tokenizer')) return yield* tokenizerFromDataSteps(readAjc1TokenizerData(path), path);
  if (base.endsWith('.txt')) return yield* fromFolder(nodePath.dirname(path));
  if (base.endsWith('.bin')) return tokenizerFromData(readLlama2cTokenizer(path), path);
  throw new WeightFormatError('BAD_HEADER', 'not a tokenizer file this library reads', { path });
}
