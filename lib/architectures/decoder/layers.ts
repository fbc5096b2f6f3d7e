/**
 * Which layers of a decoder config do what: RoPE (SmolLM3's layers without it) and sliding-window
 * attention (Mistral's and Gemma 3's patterns). Pure functions of a config's fields.
 */
import type { DecoderConfig } from './config';

/** Whether layer l rotates q and k (see DecoderConfig.noRopeLayerInterval). */
export function isRopeLayer(c: Pick<DecoderConfig, 'noRopeLayerInterval'>, l: number): boolean {
  return !c.noRopeLayerInterval || (l + 1) % c.noRopeLayerInterval !== 0;
}

/**
 * Gemma 3's attention kinds: layer l slides (sees the last `slidingWindow` positions) unless
 * l % pattern == pattern - 1 (HF's `sliding_window_pattern`, llama.cpp's
 * `attention.sliding_window_pattern`); without a pattern every layer slides (Mistral).
 */
export function isSlidingLayer(c: Pick<DecoderConfig, 'slidingWindow' | 'slidingWindowPattern'>, l: number): boolean {
  if (!c.slidingWindow) return false;
  const n = c.slidingWindowPattern;
  return !n || l % n < n - 1;
}

/**
 * A sliding-window pattern as one form for `numLayers` layers: a pattern past the last layer marks
 * no layer global, which is "every layer slides" (0).
 */
export function normalizedSlidingPattern(pattern: number, numLayers: number): number {
  return pattern > numLayers ? 0 : pattern;
}

/**
 * The sliding-window pattern of a per-layer list (true: the layer slides), or undefined when the
 * list is not "every Nth layer global" (all sliding gives 0: no global layer).
 */
export function slidingPatternOf(sliding: readonly boolean[]): number | undefined {
  const first = sliding.indexOf(false);
  const pattern = first < 0 ? 0 : first + 1;
  return sliding.every((s, l) => s === isSlidingLayer({ slidingWindow: 1, slidingWindowPattern: pattern }, l)) ? pattern : undefined;
}
