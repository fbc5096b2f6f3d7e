/**
 * How the tokenizer worker can make each tokenizer weightmap built again (a path, packed bytes or
 * the TokenizerData): the builders record it here, encodeAsync (tokenizer-loading/worker-client.ts) reads it.
 */
import type { Tokenizer } from './types';
import type { Recipe } from './worker-protocol';

const recipes = new WeakMap<Tokenizer, { key: number; recipe: Recipe }>();
let nextKey = 1;

/** Records how the worker can make `tokenizer` again (encodeAsync uses it). */
export function withRecipe<T extends Tokenizer>(tokenizer: T, recipe: Recipe): T {
  recipes.set(tokenizer, { key: nextKey++, recipe });
  return tokenizer;
}

/** The recipe `tokenizer` was recorded with, and the key the worker knows it by; undefined for a tokenizer weightmap did not build. */
export function recipeOf(tokenizer: Tokenizer): { key: number; recipe: Recipe } | undefined {
  return recipes.get(tokenizer);
}
