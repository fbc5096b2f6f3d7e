/**
 * The ajc1 sidecars made from a Hugging Face folder, as qwen3.c's export.py makes them
 * (FORMATS.md §5.3, §5.4).
 *
 * `.tokenizer`: u32 max_token_length, u32 bos, u32 eos, then for ids 0, 1, 2, … `f32 score,
 * u32 len, bytes`. The entries are the vocabulary with the added tokens (len(get_vocab())); an id
 * the files never name (a gap) is written as an empty entry with score −1e6, so that entry i is
 * always id i (a decision: the reader relies on it). Bytes: every character of the internal string
 * that is one of GPT-2's byte stand-ins becomes that byte, any other character its UTF-8 ("Ġthe" ->
 * 20 74 68 65, "<|im_end|>" verbatim). Score: −ln(rank+1) when the internal string is the
 * concatenation a+b of merge number `rank` (the last such merge when several give the same
 * string), else −1e6. max_token_length: the longest internal string, in characters.
 * bos/eos: config.json's ids, else tokenizer_config.json's bos_token/eos_token, else each other.
 *
 * `.template*`: the folder's chat template (tokenizer_config.json `chat_template`, or
 * chat_template.jinja) rendered with lib/generation/chat.ts for one user message `%s` (and a system message
 * `%s` first in the system variants), with the generation prompt, thinking off / on.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { jinjaChatTemplate, type ChatMessage } from '../../generation/chat';
import { CHAR_TO_BYTE } from '../../tokenizers/byte-level';
import type { ModelWeights, TokenizerData } from '../../addon/weights';
import type { DecoderConfig } from '../../architectures/decoder';
import { fail } from '../containers/bytes';
import { readJsonFile, type HfJson } from '../containers/hf-config';
import { readHfVocabulary, tokenIdOf, tokenText, type HfVocabulary } from './hf-vocab';

/** Score of tokens that no merge produces (bytes, added tokens) and of gaps. */
export const AJC1_UNMERGED_SCORE = -1e6;

/** The four runq templates, keyed as ajc1's metadata.templates. */
export interface Ajc1TemplateSet {
  default: string;
  withThinking: string;
  withSystem: string;
  withSystemAndThinking: string;
}

/** The folder of the files beside a checkpoint's weights, for formats read from HF-style folders. */
export function hfSideFolder(weights: ModelWeights): string | undefined {
  if (weights.format !== 'safetensors' && weights.format !== 'sepweight') return undefined;
  const stat = fs.statSync(weights.path, { throwIfNoEntry: false });
  if (!stat) return undefined;
  return stat.isDirectory() ? weights.path : nodePath.dirname(weights.path);
}

/** The raw bytes an internal (byte-level) token string stands for, character by character. */
export function internalStringBytes(text: string): Uint8Array {
  const out: number[] = [];
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    const b = cp < CHAR_TO_BYTE.length ? CHAR_TO_BYTE[cp] : -1;
    if (b >= 0) out.push(b);
    else for (const u of Buffer.from(ch, 'utf8')) out.push(u);
  }
  return Uint8Array.from(out);
}

/** The ajc1 scored vocabulary of a byte-level BPE vocabulary. */
export function ajc1TokenizerFromVocabulary(v: HfVocabulary, bosId: number, eosId: number): Extract<TokenizerData, { kind: 'scored' }> {
  const rank = new Map<string, number>();
  v.merges.forEach(([a, b], i) => rank.set(a + b, i));
  const count = v.tokens.length;
  const tokens: Uint8Array[] = new Array(count);
  const scores = new Float32Array(count);
  let maxTokenLength = 0;
  for (let id = 0; id < count; id++) {
    const text = v.tokens[id];
    if (text === undefined) {
      tokens[id] = new Uint8Array(0);
      scores[id] = AJC1_UNMERGED_SCORE;
      continue;
    }
    tokens[id] = internalStringBytes(text);
    const r = rank.get(text);
    scores[id] = r === undefined ? AJC1_UNMERGED_SCORE : -Math.log(r + 1);
    let chars = 0;
    for (const _ of text) chars++;
    if (chars > maxTokenLength) maxTokenLength = chars;
  }
  // A post-processor that appends a special token makes it the EOS (as gguf-py's SpecialVocab reads it).
  const appended = v.wraps?.eosToken === undefined ? -1 : v.tokens.indexOf(v.wraps.eosToken);
  return {
    kind: 'scored', style: 'ajc1', tokens, scores, maxTokenLength, bosId, eosId: appended >= 0 ? appended : eosId,
    ...(v.ggufPre ? { pre: v.ggufPre } : {}), ...(v.wraps?.bos ? { addBos: true } : {}), ...(appended >= 0 ? { addEos: true } : {}),
  };
}

/**
 * The `.tokenizer` contents for a decoder read from the HF folder `dir` (`v`: its vocabulary, when
 * already read); undefined when the folder holds no byte-level BPE vocabulary.
 */
export function ajc1TokenizerFromHf(dir: string, config: DecoderConfig, v = readHfVocabulary(dir)): Extract<TokenizerData, { kind: 'scored' }> | undefined {
  if (!v || v.kind !== 'bpe' || v.byteFallbackJson) return undefined;
  const bos = config.bosTokenId ?? tokenIdOf(v, tokenText(v.config?.bos_token));
  const eos = config.eosTokenIds?.[0] ?? tokenIdOf(v, tokenText(v.config?.eos_token));
  if (bos === undefined && eos === undefined) {
    return fail('CONFIG_MISMATCH', 'neither config.json nor tokenizer_config.json names a bos or eos token', { path: dir, expected: 'bos_token_id / eos_token_id', found: 'absent' });
  }
  if (v.tokens.length > config.vocabSize) {
    fail('CONFIG_MISMATCH', 'the tokenizer has more tokens than the model has embeddings', { path: v.path, expected: `<= ${config.vocabSize}`, found: v.tokens.length });
  }
  return ajc1TokenizerFromVocabulary(v, bos ?? eos!, eos ?? bos!);
}

/** The Jinja chat template of an HF folder: tokenizer_config.json's, else chat_template.jinja. */
export function chatTemplateSource(dir: string, config: HfJson | undefined): string | undefined {
  const t = config?.chat_template;
  if (typeof t === 'string') return t;
  if (Array.isArray(t)) {
    const named = t.find((e) => typeof e === 'object' && e !== null && (e as HfJson).name === 'default');
    if (named && typeof (named as HfJson).template === 'string') return (named as HfJson).template as string;
  }
  const file = nodePath.join(dir, 'chat_template.jinja');
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : undefined;
}

/**
 * The four `.template*` texts of an HF folder; undefined when it has no chat template. The
 * template is code from the folder: it renders in the render worker, within its budget.
 */
export async function ajc1TemplatesFromHf(dir: string): Promise<Ajc1TemplateSet | undefined> {
  const configPath = nodePath.join(dir, 'tokenizer_config.json');
  const config = fs.existsSync(configPath) ? (readJsonFile(configPath) as HfJson) : undefined;
  const source = chatTemplateSource(dir, config);
  if (source === undefined) return undefined;
  const template = jinjaChatTemplate(source, { bosToken: tokenText(config?.bos_token), eosToken: tokenText(config?.eos_token) });
  const user: ChatMessage[] = [{ role: 'user', content: '%s' }];
  const system: ChatMessage[] = [{ role: 'system', content: '%s' }, ...user];
  const render = (messages: ChatMessage[], enableThinking: boolean) => template.renderAsync(messages, { addGenerationPrompt: true, enableThinking });
  return {
    default: await render(user, false),
    withThinking: await render(user, true),
    withSystem: await render(system, false),
    withSystemAndThinking: await render(system, true),
  };
}
