/**
 * DECODER_VARIANTS: every decoder family's row, gathered from the family folders. A new family
 * is its folder (its row, its name in DecoderArchitectures, any hooks) and its line here; the
 * order is the order messages list them in.
 */
import type { DecoderArchitecture, DecoderVariant } from './config';
import { gemma3 } from '../gemma';
import { gptoss } from '../gptoss';
import { granite } from '../granite';
import { llama } from '../llama';
import { mistral } from '../mistral';
import { phi3 } from '../phi3';
import { qwen2, qwen3 } from '../qwen';
import { qwen3moe } from '../qwen3moe';
import { smollm3 } from '../smollm3';

export const DECODER_VARIANTS: Readonly<Record<DecoderArchitecture, DecoderVariant>> = {
  llama,
  qwen2,
  qwen3,
  mistral,
  gemma3,
  granite,
  smollm3,
  phi3,
  qwen3moe,
  gptoss,
};
