/**
 * The real tokenizer.json / tokenizer_config.json files of Llama 3, Llama 3.1, Gemma 3, gpt-oss
 * (o200k_harmony; its package ships no chat template) and a Llama-2-style
 * one ('llama2': its ids are Mistral 7B v0.1's) (npm
 * @lenml/tokenizer-*, devDependencies), and the corpus the differential tests run them over: the
 * shared awkward-string corpus plus each family's own special tokens, long numbers and random
 * strings from a fixed seed.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { jinjaChatTemplate, type ChatTemplate } from '../../lib/generation/chat';
import { mulberry32 } from '../helpers/rng';
import { makeCorpus } from './corpus';

export type Family = 'llama3' | 'llama3_1' | 'gemma3' | 'llama2' | 'gptoss';

/** The folder holding the family's tokenizer.json and tokenizer_config.json. */
export function familyDir(family: Family): string {
  // (the package exports only its code: its main module lies in dist/, the files beside it in models/)
  return nodePath.join(nodePath.dirname(require.resolve(`@lenml/tokenizer-${family}`)), '..', 'models');
}

export function familyJson(family: Family, file: 'tokenizer.json' | 'tokenizer_config.json'): any {
  return JSON.parse(fs.readFileSync(nodePath.join(familyDir(family), file), 'utf8'));
}

const FAMILY_SPECIALS: Record<Family, string[]> = {
  llama3: ['<|begin_of_text|>', '<|end_of_text|>', '<|start_header_id|>', '<|end_header_id|>', '<|eot_id|>', '<|reserved_special_token_5|>', '<|begin_of_text', 'eot_id|>'],
  llama3_1: ['<|begin_of_text|>', '<|eom_id|>', '<|python_tag|>', '<|finetune_right_pad_id|>', '<|start_header_id|>user<|end_header_id|>\n\n', '<|eot_id|>'],
  llama2: ['<s>', '</s>', '<unk>', '<s', 's>', '<0x41>', '▁', '▁▁', '[INST]', '[/INST]', '<<SYS>>\n', '\n<</SYS>>\n\n'],
  gptoss: ['<|start|>', '<|channel|>', '<|message|>', '<|end|>', '<|return|>', '<|call|>', '<|constrain|>', '<|startoftext|>', '<|endoftext|>', '<|endofprompt|>',
    '<|reserved_200017|>', '<|start|>assistant<|channel|>final<|message|>', '<|channel', 'end|>', ' to=functions.get_weather <|constrain|>json'],
  gemma3: ['<bos>', '<eos>', '<pad>', '<unk>', '<start_of_turn>', '<end_of_turn>', '<start_of_image>', '<image_soft_token>', '<mask>', '[@BOS@]', '<start_of_turn>user\n', '<0x41>', '▁', '▁▁', '<unused7>'],
};

function digitRun(r: () => number): string {
  let s = '';
  const n = 1 + Math.floor(r() * 40);
  for (let i = 0; i < n; i++) s += String(Math.floor(r() * 10));
  return s;
}

/** Random code points from the whole Unicode range (surrogates left out), so byte fallback and rare scripts are hit. */
function randomString(r: () => number): string {
  let s = '';
  const n = 1 + Math.floor(r() * 30);
  for (let i = 0; i < n; i++) {
    const u = r();
    let cp = u < 0.4 ? 0x20 + Math.floor(r() * 0x5f) : u < 0.7 ? Math.floor(r() * 0x3000) : Math.floor(r() * 0x110000);
    if (cp >= 0xd800 && cp <= 0xdfff) cp = 0x20;
    s += String.fromCodePoint(cp);
  }
  return s;
}

/** What a family's split treats specially, beyond the shared parts (o200k: case changes inside words, contractions kept on them, '/' after punctuation, marks). */
const FAMILY_PARTS: Partial<Record<Family, string[]>> = {
  gptoss: [
    "DON'T he'S i'd THEY'LL we'Re O'Neil 'S", 'HTTPServerError getHTTPResponseCode XMLHttpRequest iPhone McDonald ǅemal ǈ', 'e\u0301 A\u030a n\u0303o\u0308 \u0301x',
    'a+/b//c ./src/lib/x.ts\n!/ ?/\r\n', 'مرحبا بالعالم، كيف حالك؟ ١٢٣٤', 'नमस्ते दुनिया क्षत्रिय ਪੰਜਾਬੀ ಕನ್ನಡ', 'İstanbul ıi ſ K ﬁ Straße ΣΑΣ σας',
    // letters whose category is newer than HF's tables (Lu, Ll, Lm, M) and U+0295, Ll there and Lo here
    '\u{a7ce}x\u{a7cf} \u{16ea0}\u{16ebb}a \u{a7f1}b \u{1acf}c aʕb Aʕ ʕA ʕʕ',
  ],
};

/** `count` strings (the shared corpus's first 2000, then the family's own); the same every run. */
export function familyCorpus(family: Family, count = 3000): string[] {
  const out = makeCorpus(2000);
  const r = mulberry32(777);
  const specials = FAMILY_SPECIALS[family];
  const parts: (() => string)[] = [
    () => specials[Math.floor(r() * specials.length)],
    () => digitRun(r),
    () => `${digitRun(r)}.${digitRun(r)}`,
    () => ' '.repeat(1 + Math.floor(r() * 20)),
    () => '\n'.repeat(1 + Math.floor(r() * 6)),
    () => '\t '.repeat(1 + Math.floor(r() * 4)),
    () => randomString(r),
    () => 'def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n',
    () => '日本語のテキストと中文句子，还有한국어 문장。',
    () => '🦙🔥 👩🏽‍🚀 ✨🧪',
    // letters and digits of Unicode 17, unassigned in older tables
    () => '\u{32416}:M \u{11db0}\u{11db1}x \u{16ff4}5 a\u{88f}b \u{11de0}12',
    ...(FAMILY_PARTS[family] ?? []).map((part) => () => part),
  ];
  while (out.length < count) {
    let s = '';
    const n = 1 + Math.floor(r() * 8);
    for (let i = 0; i < n; i++) s += parts[Math.floor(r() * parts.length)]() + (r() < 0.4 ? ' ' : '');
    out.push(s);
  }
  return out;
}

/** A tokenizer_config.json's chat template, rendered through weightmap's Jinja path with its own BOS/EOS texts. */
export function familyChatTemplate(family: Family): ChatTemplate {
  const config = familyJson(family, 'tokenizer_config.json');
  return jinjaChatTemplate(config.chat_template, { bosToken: config.bos_token, eosToken: config.eos_token });
}
