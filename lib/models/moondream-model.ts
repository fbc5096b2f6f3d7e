/**
 * Moondream question answering (FORMATS.md §2.6): the image is encoded to embeddings, the text
 * model reads [BOS] + image embeddings + tokens("\n\nQuestion: {q}\n\nAnswer:") and generates
 * until EOS. Causal attention by default (moondream-zig, the MOON source); `prefixAttention`
 * makes the BOS + image positions attend to each other as upstream Moondream does.
 */
import type { MoondreamEngine } from '../engines/moondream';
import { DisposedError, rangeError } from '../base/errors';
import { checkTokenIds, startGeneration, type GenerateOptions, type Generation, type GenerationHost } from '../generation/generate';
import { imageToRgb, type ImageInput } from './image';
import { Model } from './language-model';
import type { Tokenizer } from '../tokenizers';

export type { ImageInput, RawImage } from './image';

/** Options of `encodeImage()`. */
export interface EncodeImageOptions {
  signal?: AbortSignal;
}

/** Image embeddings [patches × textHidden] of `image` (decoded and resized to the encoder size). */
export async function encodeImage(engine: MoondreamEngine, image: ImageInput, options: EncodeImageOptions = {}): Promise<Float32Array> {
  const rgb = await imageToRgb(image, engine.config.vision.imageSize);
  return (await engine.encodeRgb(rgb, { signal: options.signal })).embeddings;
}

/** The question's token ids, as upstream builds them: [\n\n Question :] + " q" + [\n\n Answer :]. */
export function questionIds(tokenizer: Tokenizer, question: string): number[] {
  return tokenizer.encode(`\n\nQuestion: ${question}\n\nAnswer:`, { addSpecialTokens: false });
}

/**
 * The ids the model reads after the image: the question's text as questionIds builds it, or ids
 * given instead, used as they are (a model without a tokenizer, e.g. a bare MOON file, takes only these).
 */
function promptAfterImage(tokenizer: Tokenizer, question: string | ArrayLike<number>, vocabSize: number): number[] {
  if (typeof question === 'string') return questionIds(tokenizer, question);
  const ids = checkTokenIds(question, vocabSize, 'question ids');
  if (ids.length === 0) throw rangeError('answer: the question has no token ids');
  return ids;
}

/**
 * The prefix of a Moondream answer as embedding rows [1 + patches + question, textHidden]:
 * BOS, the image embeddings, the question tokens.
 */
export function answerPrefixRows(engine: MoondreamEngine, imageEmbeddings: Float32Array, ids: readonly number[]): Float32Array {
  const d = engine.config.text.hiddenSize;
  const patches = imageEmbeddings.length / d;
  if (!Number.isInteger(patches) || patches < 1) throw rangeError(`image embeddings must be whole rows of ${d} floats`);
  const rows = new Float32Array((1 + patches + ids.length) * d);
  rows.set(engine.embed([engine.config.text.bosTokenId]), 0);
  rows.set(imageEmbeddings, d);
  if (ids.length > 0) rows.set(engine.embed(ids), (1 + patches) * d);
  return rows;
}

/**
 * The number of prefix positions for `prefixAttention`: true = BOS + every image patch
 * (730 for Moondream2), a number as given, false/undefined = 0 (causal).
 */
export function prefixLength(engine: MoondreamEngine, prefixAttention: number | boolean | undefined): number {
  if (prefixAttention === true) return 1 + engine.config.vision.numPatches;
  if (prefixAttention === undefined || prefixAttention === false) return 0;
  if (!Number.isInteger(prefixAttention) || prefixAttention < 0) throw rangeError('prefixAttention must be a non-negative integer or a boolean');
  return prefixAttention;
}

/** Options of `answer()`: the generation options plus Moondream's attention over the image. */
export interface AnswerOptions extends GenerateOptions {
  /**
   * Bidirectional attention over the BOS + image positions, as upstream Moondream computes
   * (true = 1 + patches, 730 for Moondream2; a number = that many positions). Default: causal.
   */
  prefixAttention?: number | boolean;
}

/**
 * Answers `question` (text, or its token ids as the model reads them after the image) about
 * `image`: an async iterator of { token, text } pieces (lib/generation/generate.ts)
 * that stops at EOS by default. Nothing runs until the first next(): then the image is encoded,
 * BOS + image + question are prefilled in the answer's own session (disposed at the end), and
 * tokens are generated with the sampling options.
 */
export function answer(
  engine: MoondreamEngine,
  tokenizer: Tokenizer,
  image: ImageInput,
  question: string | ArrayLike<number>,
  options: AnswerOptions = {},
): Generation {
  if (typeof question !== 'string' && !(typeof question === 'object' && question !== null && typeof question.length === 'number')) {
    throw new TypeError('answer: question must be a string or an array of token ids');
  }
  const { prefixAttention, ...generateOptions } = options;
  const prefix = prefixLength(engine, prefixAttention);
  let inner: Generation | undefined;
  const start = async (): Promise<Generation> => {
    inner ??= await startAnswer(engine, tokenizer, image, question, prefix, generateOptions);
    return inner;
  };
  const generation: Generation = {
    get stopReason() {
      return inner?.stopReason;
    },
    get tokens() {
      return inner?.tokens ?? [];
    },
    get speculative() {
      return inner?.speculative;
    },
    next: async () => (await start()).next(),
    return: async (value?: unknown) => (inner ? inner.return!(value as never) : { done: true, value: undefined as never }),
    throw: async (error?: unknown) => (inner ? inner.throw!(error) : Promise.reject(error)),
    [Symbol.asyncIterator]() {
      return this;
    },
    text: async () => (await start()).text(),
  };
  return generation;
}

async function startAnswer(
  engine: MoondreamEngine,
  tokenizer: Tokenizer,
  image: ImageInput,
  question: string | ArrayLike<number>,
  prefix: number,
  options: GenerateOptions,
): Promise<Generation> {
  const text = engine.config.text;
  const patches = engine.config.vision.numPatches;
  const ids = promptAfterImage(tokenizer, question, text.vocabSize);
  if (1 + patches + ids.length > text.maxSeqLen) {
    throw rangeError(`answer: BOS + ${patches} image positions + ${ids.length} question tokens exceed the context of ${text.maxSeqLen}`);
  }
  if (prefix > patches + ids.length) throw rangeError('answer: prefixAttention is longer than the prompt');
  const embeddings = await encodeImage(engine, image, { signal: options.signal });

  // Everything but the last question token is fed here (the prefix in one call); the generation
  // feeds the last token and samples from its logits. Its ids name the image positions with the
  // BOS id: a special token, skipped when the stream decoder is primed with them.
  const rows = answerPrefixRows(engine, embeddings, ids.slice(0, -1));
  const promptIds = [...new Array<number>(1 + patches).fill(text.bosTokenId), ...ids];
  const session = engine.createSession();
  try {
    await session.eval(rows, { logits: 'none', prefixAttention: prefix, ids: promptIds.slice(0, -1), signal: options.signal });
  } catch (error) {
    session.dispose();
    throw error;
  }
  const host: GenerationHost = {
    tokenizer,
    contextLength: text.maxSeqLen,
    vocabSize: text.vocabSize,
    acquire: () => ({ session, release: () => session.dispose() }),
  };
  try {
    return startGeneration(host, promptIds, { ...options, stopTokens: options.stopTokens ?? [text.eosTokenId] });
  } catch (error) {
    session.dispose();
    throw error;
  }
}

/**
 * A loaded Moondream model (loadModel on MOON weights): text generation like every Model, plus
 * the vision side. `model.answer(image, question)` streams the answer's pieces.
 */
export class MoondreamModel extends Model {
  readonly moondream: MoondreamEngine;

  constructor(engine: MoondreamEngine, ...rest: ModelRest) {
    super(engine, ...rest);
    this.moondream = engine;
  }

  /** Token ids of `text` after Moondream's BOS (its GPT-2 tokenizer.json adds none). */
  override encode(text: string): number[] {
    return [this.moondream.config.text.bosTokenId, ...this.tokenizer.encode(text, { addSpecialTokens: false })];
  }

  /** Text generation; a text prompt starts with BOS, as every Moondream sequence does. */
  override generate(prompt: string | ArrayLike<number>, options: GenerateOptions = {}): Generation {
    return super.generate(typeof prompt === 'string' ? this.encode(prompt) : prompt, options);
  }

  /** Image embeddings [patches × textHidden] (rows the text model reads). */
  encodeImage(image: ImageInput, options: EncodeImageOptions = {}): Promise<Float32Array> {
    if (this.disposed) return Promise.reject(new DisposedError('Model'));
    return encodeImage(this.moondream, image, options);
  }

  /**
   * Answers a question about an image: an async iterator of { token, text } pieces. `question` is
   * text, or token ids used as they are (the only form a model without a tokenizer takes).
   */
  answer(image: ImageInput, question: string | ArrayLike<number>, options: AnswerOptions = {}): Generation {
    if (this.disposed) throw new DisposedError('Model');
    return answer(this.moondream, this.tokenizer, image, question, options);
  }
}

type ModelRest = ConstructorParameters<typeof Model> extends [unknown, ...infer R] ? R : never;
