/**
 * Layer ranges of pipeline stages and the model identity stages exchange at connect.
 *
 * A range is written "first-last", both inclusive ("0-13" and "14-27" split a 28-layer model),
 * unlike sepweight part specs, which are half-open.
 */
import { createHash } from 'node:crypto';
import { decoderTensorShapes, type DecoderConfig } from '../architectures/decoder';
import type { ModelConfig } from '../architectures/model-config';
import { PipelineError, rangeError } from '../base/errors';

/** A contiguous range of layers, both ends included ("0-13" is { first: 0, last: 13 }). */
export interface LayerRange {
  first: number;
  /** Inclusive. */
  last: number;
}

/** Parses "a-b" (a <= b) or "a" (one layer). RangeError otherwise. */
export function parseLayerRange(text: string): LayerRange {
  const m = /^\s*(0|[1-9][0-9]{0,5})(?:-(0|[1-9][0-9]{0,5}))?\s*$/.exec(text);
  if (!m) throw rangeError(`layers ${JSON.stringify(text)} must be "first-last" (inclusive), e.g. "0-13"`);
  const first = Number(m[1]);
  const last = m[2] === undefined ? first : Number(m[2]);
  if (last < first) throw rangeError(`layers ${JSON.stringify(text)}: the last layer comes before the first`);
  return { first, last };
}

export function formatLayerRange(r: LayerRange): string {
  return `${r.first}-${r.last}`;
}

/** The sepweight part spec that maps the folders of `range` (start/ with layer 0, end/ with the last). */
export function sepweightParts(range: LayerRange, numLayers: number): string {
  if (range.last >= numLayers) {
    throw rangeError(`layers ${formatLayerRange(range)} lie past the model's last layer ${numLayers - 1}`);
  }
  return `${range.first === 0 ? 'b ' : ''}${range.first}-${range.last + 1}${range.last === numLayers - 1 ? ' e' : ''}`;
}

/** Throws PipelineError ERR_WEIGHTMAP_PIPELINE_CONFIG unless the ranges cover layers [0, numLayers) exactly once, in order. */
export function checkCoverage(ranges: readonly LayerRange[], numLayers: number): void {
  let next = 0;
  for (const r of ranges) {
    if (r.first !== next) {
      const why = r.first < next ? `layer ${r.first} is served twice` : `layers ${next}-${r.first - 1} are served by no stage`;
      throw new PipelineError('ERR_WEIGHTMAP_PIPELINE_CONFIG', `the stages must cover layers 0-${numLayers - 1} once, in order: ${why}`);
    }
    next = r.last + 1;
  }
  if (next !== numLayers) {
    const why = next < numLayers ? `layers ${next}-${numLayers - 1} are served by no stage` : `the model has only ${numLayers} layers`;
    throw new PipelineError('ERR_WEIGHTMAP_PIPELINE_CONFIG', `the stages must cover layers 0-${numLayers - 1} once, in order: ${why}`);
  }
}

/** JSON with object keys sorted, so that equal configs hash equally whatever their key order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value as object)
      .sort()
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value);
}

/** sha256 (hex) of the model's config and the name and shape of every tensor it has. */
export function modelHash(config: ModelConfig): string {
  const shapes = decoderTensorShapes(config as DecoderConfig);
  return createHash('sha256').update(canonicalJson({ config, shapes })).digest('hex');
}
