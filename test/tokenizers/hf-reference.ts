/** Hugging Face's Rust tokenizers (npm @anush008/tokenizers) set up for the fixture vocabularies. */
import * as fs from 'node:fs';
import { Tokenizer as HfTokenizer } from '@anush008/tokenizers';
import { fixture } from '../helpers/fixtures';
import { QWEN2_PATTERN } from '../../lib/tokenizers';

/**
 * The tokenizer.json Qwen3 ships, rebuilt from vocab.json + merges.txt + tokenizer_config.json
 * (the fixture keeps only those): NFC, the Qwen2 split, byte-level BPE, the 26 added tokens.
 */
export function qwen3TokenizerJson(): any {
  const vocab = JSON.parse(fs.readFileSync(fixture('tokenizers', 'qwen3', 'vocab.json'), 'utf8'));
  const merges = fs
    .readFileSync(fixture('tokenizers', 'qwen3', 'merges.txt'), 'utf8')
    .split('\n')
    .filter((line, i) => i > 0 && line.length > 0);
  const config = JSON.parse(fs.readFileSync(fixture('tokenizers', 'qwen3', 'tokenizer_config.json'), 'utf8'));
  const added = Object.entries(config.added_tokens_decoder).map(([id, t]) => ({ id: Number(id), ...(t as object) }));
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: { type: 'NFC' },
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [{ type: 'Split', pattern: { Regex: QWEN2_PATTERN }, behavior: 'Isolated', invert: false }, byteLevel],
    },
    post_processor: byteLevel,
    decoder: byteLevel,
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: '',
      end_of_word_suffix: '',
      fuse_unk: false,
      byte_fallback: false,
      vocab,
      merges,
    },
  };
}

export function hfFromJson(json: unknown): HfTokenizer {
  return HfTokenizer.fromString(JSON.stringify(json));
}

export function hfMiniLm(): HfTokenizer {
  const t = HfTokenizer.fromFile(fixture('tokenizers', 'minilm', 'tokenizer.json'));
  t.disableTruncation();
  t.disablePadding();
  return t;
}
