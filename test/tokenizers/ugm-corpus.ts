/**
 * The corpus the GGUF UGM tables are made on (scripts/interop/ugm-table.js) and checked with
 * (ugm-llama-cpp.test.ts): the shared awkward-string corpus, multilingual lines (CJK, Arabic,
 * Devanagari, emoji, accents, NFKC-affected forms, whitespace runs; strings up to 120 characters, to
 * keep the committed table small), and XLM-R's special tokens
 * inside text, glued to words and beside spaces.
 */
import { makeCorpus } from './corpus';
import { multilingualLines } from './multilingual';

const SPECIAL_CASES = [
  '<s>', '</s>', '<unk>', '<pad>', '<mask>', 'a <mask> b', 'a<mask>b', 'a  \t<mask>  b', '<s>hello</s>', ' <s> </s> ', '<s</s>>', '<mask><mask>',
  'hello <mask>.', '\n<mask>\n', 'ｆｕｌｌ<mask>ｗｉｄｔｈ', '<unk><unk> x', '</s><s>', '<s>\u2581x', '\u2581\u2581', '\u2581 \u2581',
];

export function ugmCorpus(): string[] {
  return [...SPECIAL_CASES, ...makeCorpus(500, 7).filter((s) => s.length <= 120), ...multilingualLines(300, 2028)];
}
