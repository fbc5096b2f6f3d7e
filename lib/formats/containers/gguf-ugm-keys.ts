/**
 * The `tokenizer.ggml.*` keys of a UGM ("t5") vocabulary beyond the common ones, as llama.cpp
 * reads them: the precompiled charsmap (a u8 or i8 array; sentencepiece's normalizer rules, its
 * size bounded here before it is kept), remove_extra_whitespaces, and general.architecture (by
 * which llama.cpp gives some families' tokens attributes).
 */
import { MAX_CHARSMAP_BYTES } from '../../tokenizers/precompiled-charsmap';
import type { TokenizerData } from '../../addon/weights';
import { fail } from './bytes';

export function readUgmKeys(meta: Record<string, unknown>, path: string, out: Extract<TokenizerData, { kind: 'gguf' }>): void {
  const arch = meta['general.architecture'];
  if (typeof arch === 'string') out.architecture = arch;
  const removeExtra = meta['tokenizer.ggml.remove_extra_whitespaces'];
  if (removeExtra !== undefined) {
    if (typeof removeExtra !== 'boolean') fail('BAD_HEADER', "'tokenizer.ggml.remove_extra_whitespaces' is not a bool", { path, found: typeof removeExtra });
    out.removeExtraWhitespaces = removeExtra;
  }
  const charsmap = meta['tokenizer.ggml.precompiled_charsmap'];
  if (charsmap === undefined) return;
  if (!(charsmap instanceof Uint8Array || charsmap instanceof Int8Array)) fail('BAD_HEADER', "'tokenizer.ggml.precompiled_charsmap' is not a u8 array", { path });
  const bytes = charsmap as Uint8Array | Int8Array;
  if (bytes.length > MAX_CHARSMAP_BYTES) fail('BAD_HEADER', "'tokenizer.ggml.precompiled_charsmap' is too large", { path, expected: `<= ${MAX_CHARSMAP_BYTES} bytes`, found: bytes.length });
  out.precompiledCharsmap = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
