/**
 * Sampling options as users give them (node-llama-cpp's names and defaults), validated and turned
 * into the native sampler's parameters (binding.d.ts NativeSamplingParams). The selection itself
 * runs natively (native/sampling/sampler.cc): logit bias → repetition/frequency/presence penalties
 * over the last `penaltyLastN` tokens → greedy if temperature is 0, else top-k → top-p → min-p →
 * temperature → softmax → one draw from the seeded xorshift64* generator.
 */
import type { NativeSamplingParams } from '../addon/binding';
import { rangeError } from '../base/errors';

/** How the next token is chosen; every field has its default in SAMPLING_DEFAULTS. */
export interface SamplingOptions {
  /** 0 (the default): greedy, the highest logit (lowest id on ties). > 0: sample, softer as it grows. */
  temperature?: number;
  /** Keep the k most likely tokens. Default 40; 0 = off. Only when sampling (temperature > 0). */
  topK?: number;
  /** Keep the shortest most-likely prefix whose probability exceeds p. Default 0.95; 1 = off. */
  topP?: number;
  /** Keep tokens with probability >= minP × the top probability. Default 0 (off). */
  minP?: number;
  /** > 1 discourages tokens seen in the last `penaltyLastN`: positive logits ÷ it, negative ones ×. Default 1 (off). */
  repeatPenalty?: number;
  /** Subtracted from a token's logit once per occurrence in the window. Default 0. */
  frequencyPenalty?: number;
  /** Subtracted once from the logit of every token present in the window. Default 0. */
  presencePenalty?: number;
  /** The window of recent tokens (prompt included) the penalties look at. Default 64; -1 = the whole context; 0 = off. */
  penaltyLastN?: number;
  /** Added to the logits of these token ids; -Infinity bans a token. */
  logitBias?: Record<number, number> | Map<number, number> | ReadonlyArray<readonly [number, number]>;
  /** Seed of the generator: same seed and options, same tokens. Default: random. */
  seed?: number | bigint;
}

/**
 * The defaults applied to every field a caller leaves out: the one source of them (the CLI help
 * prints these; the native sampler gets every field from resolveSampling).
 */
export const SAMPLING_DEFAULTS = Object.freeze({
  temperature: 0,
  topK: 40,
  topP: 0.95,
  minP: 0,
  repeatPenalty: 1,
  frequencyPenalty: 0,
  presencePenalty: 0,
  penaltyLastN: 64,
});

/** The native sampler's parameters with every field given (its own defaults are the off values). */
export type ResolvedParams = NativeSamplingParams & { [K in keyof typeof SAMPLING_DEFAULTS]: number };

/** Sampling options with every default applied, as the native sampler takes them (`resolveSampling()`). */
export interface ResolvedSampling {
  params: ResolvedParams;
  seed: bigint;
  /** temperature <= 0: no generator draws happen. */
  greedy: boolean;
}

function typeError(message: string): TypeError {
  const error = new TypeError(message);
  (error as TypeError & { code: string }).code = 'ERR_INVALID_ARG_TYPE';
  return error;
}

function numberOption(options: SamplingOptions, key: keyof typeof SAMPLING_DEFAULTS): number {
  const value = options[key] ?? SAMPLING_DEFAULTS[key];
  if (typeof value !== 'number') throw typeError(`${key} must be a number, got ${typeof value}`);
  if (Number.isNaN(value)) throw rangeError(`${key} must not be NaN`);
  return value;
}

function check(ok: boolean, key: string, rule: string, value: unknown): void {
  if (!ok) throw rangeError(`${key} must be ${rule}, got ${String(value)}`);
}

function biasEntries(bias: NonNullable<SamplingOptions['logitBias']>): [unknown, unknown][] {
  if (bias instanceof Map) return [...bias.entries()];
  if (Array.isArray(bias)) {
    return bias.map((entry, i) => {
      if (!Array.isArray(entry) || entry.length !== 2) throw typeError(`logitBias[${i}] must be a [tokenId, bias] pair`);
      return [entry[0], entry[1]];
    });
  }
  if (typeof bias === 'object') return Object.entries(bias).map(([k, v]) => [Number(k), v]);
  throw typeError('logitBias must be an object, a Map or an array of [tokenId, bias] pairs');
}

/**
 * A random 64-bit seed that is never 0: two draws of Math.random (V8 seeds its generator from the
 * OS), which a sampling seed needs no more than; node:crypto would cost a fresh process ~2 ms of
 * require before its first token.
 */
export function randomSeed(): bigint {
  const half = () => BigInt(Math.floor(Math.random() * 2 ** 32));
  const seed = (half() << 32n) | half();
  return seed === 0n ? 1n : seed;
}

/**
 * Validates `options` (TypeError for wrong types, RangeError with code ERR_OUT_OF_RANGE for bad
 * values) and fills in the defaults. `vocabSize`, when known, bounds the logit-bias ids.
 */
export function resolveSampling(options: SamplingOptions = {}, vocabSize?: number): ResolvedSampling {
  if (typeof options !== 'object' || options === null) throw typeError('sampling options must be an object');
  const temperature = numberOption(options, 'temperature');
  check(temperature >= 0 && Number.isFinite(temperature), 'temperature', 'a finite number >= 0', temperature);
  const topK = numberOption(options, 'topK');
  check(Number.isInteger(topK) && topK >= 0 && topK <= 0x7fffffff, 'topK', 'an integer >= 0 (0 = off)', topK);
  const topP = numberOption(options, 'topP');
  check(topP >= 0 && topP <= 1, 'topP', 'in [0, 1] (1 = off)', topP);
  const minP = numberOption(options, 'minP');
  check(minP >= 0 && minP <= 1, 'minP', 'in [0, 1] (0 = off)', minP);
  const repeatPenalty = numberOption(options, 'repeatPenalty');
  check(repeatPenalty > 0 && Number.isFinite(repeatPenalty), 'repeatPenalty', 'a finite number > 0 (1 = off)', repeatPenalty);
  const frequencyPenalty = numberOption(options, 'frequencyPenalty');
  check(Number.isFinite(frequencyPenalty), 'frequencyPenalty', 'a finite number', frequencyPenalty);
  const presencePenalty = numberOption(options, 'presencePenalty');
  check(Number.isFinite(presencePenalty), 'presencePenalty', 'a finite number', presencePenalty);
  const penaltyLastN = numberOption(options, 'penaltyLastN');
  check(Number.isInteger(penaltyLastN) && penaltyLastN >= -1 && penaltyLastN <= 0x7fffffff, 'penaltyLastN', 'an integer >= -1 (-1 = whole context, 0 = off)', penaltyLastN);

  const params: ResolvedParams = {
    temperature,
    topK,
    topP,
    minP,
    repeatPenalty,
    frequencyPenalty,
    presencePenalty,
    penaltyLastN,
  };

  if (options.logitBias !== undefined) {
    const entries = biasEntries(options.logitBias);
    const ids = new Int32Array(entries.length);
    const values = new Float32Array(entries.length);
    entries.forEach(([id, bias], i) => {
      if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > 0x7fffffff) {
        throw rangeError(`logitBias: token ids must be integers >= 0, got ${String(id)}`);
      }
      if (vocabSize !== undefined && id >= vocabSize) throw rangeError(`logitBias: token id ${id} is outside the vocabulary (size ${vocabSize})`);
      if (typeof bias !== 'number') throw typeError(`logitBias[${id}] must be a number, got ${typeof bias}`);
      if (!(Number.isFinite(bias) || bias === -Infinity)) throw rangeError(`logitBias[${id}] must be finite or -Infinity, got ${bias}`);
      ids[i] = id;
      values[i] = bias;
    });
    if (entries.length) {
      params.logitBiasIds = ids;
      params.logitBiasValues = values;
    }
  }

  let seed: bigint;
  const given = options.seed;
  if (given === undefined) {
    seed = randomSeed();
  } else if (typeof given === 'bigint') {
    if (given < 0n || given >= 1n << 64n) throw rangeError(`seed must be in [0, 2^64), got ${given}`);
    seed = given;
  } else if (typeof given === 'number') {
    if (!Number.isSafeInteger(given) || given < 0) throw rangeError(`seed must be a non-negative safe integer or a BigInt, got ${given}`);
    seed = BigInt(given);
  } else {
    throw typeError(`seed must be a number or a BigInt, got ${typeof given}`);
  }

  return { params, seed, greedy: temperature === 0 };
}

/** The ids a logit bias of -Infinity bans, as a bitset over [0, vocabSize) (bit t % 32 of word t / 32); undefined when it bans none. */
export function bannedTokens(params: NativeSamplingParams, vocabSize: number): Uint32Array | undefined {
  const { logitBiasIds: ids, logitBiasValues: values } = params;
  if (ids === undefined || values === undefined) return undefined;
  let banned: Uint32Array | undefined;
  for (let i = 0; i < ids.length; i++) {
    const t = ids[i];
    if (values[i] !== -Infinity || t >= vocabSize) continue;
    banned ??= new Uint32Array(Math.ceil(vocabSize / 32));
    banned[t >>> 5] |= 1 << (t & 31);
  }
  return banned;
}

/** True when some id in [0, vocabSize) is in `allowed` (every id when undefined) and not in `banned` (bitsets as bannedTokens makes). */
export function anyTokenLeft(vocabSize: number, allowed: Uint32Array | undefined, banned: Uint32Array | undefined): boolean {
  const words = Math.ceil(vocabSize / 32);
  for (let w = 0; w < words; w++) {
    const inVocab = w === words - 1 && vocabSize % 32 !== 0 ? (1 << vocabSize % 32) - 1 : 0xffffffff;
    const left = (allowed === undefined ? inVocab : (allowed[w] ?? 0) & inVocab) & ~(banned?.[w] ?? 0);
    if (left !== 0) return true;
  }
  return false;
}
