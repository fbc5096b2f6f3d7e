/**
 * A real XLM-R UGM vocabulary (llama.cpp's models/ggml-vocab-nomic-bert-moe.gguf: 250k pieces, the
 * nmt_nfkc charsmap, add_space_prefix, remove_extra_whitespaces, <mask> stripping the spaces
 * before it) against llama.cpp's own tokenizer: the table scripts/interop/ugm-table.js wrote with
 * node-llama-cpp on the strings of ugm-corpus.ts (ids with and without special tokens parsed, the
 * text of the ids with BOS/EOS, decoded with special tokens removed and kept). The vocabulary file
 * lives in the peer cache's llama.cpp clone (scripts/bench/peers/cache.js), not in the repository:
 * skipped, saying so, where that clone is absent.
 */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as nodePath from 'node:path';
import { loadTokenizer, loadTokenizerSync } from '../../lib/tokenizer-loading';
import { useTempTokenizerCache } from './family-compare';
import { ugmCorpus } from './ugm-corpus';

const table = JSON.parse(fs.readFileSync(nodePath.join(__dirname, 'tables', 'ugm-nomic-bert-moe.json'), 'utf8'));
const peers = process.env.WEIGHTMAP_PEERS_CACHE ?? nodePath.join(os.homedir(), '.cache', 'weightmap-peers');
const file = nodePath.join(peers, 'llama.cpp', 'models', table.vocab);
const HAVE = fs.existsSync(file);
if (!HAVE) console.warn(`ugm-llama-cpp.test.ts: ${file} not found (the peer cache's llama.cpp clone, scripts/bench/peers/cache.js): skipped`);

const ids = (s: string) => (s === '' ? [] : s.split(' ').map(Number));
const cacheDir = useTempTokenizerCache();

test('the table was made on this corpus', () => {
  const corpus = ugmCorpus();
  expect(crypto.createHash('sha256').update(JSON.stringify(corpus)).digest('hex')).toBe(table.corpusSha256);
  expect(table.cases).toHaveLength(corpus.length);
});

(HAVE ? describe : describe.skip)(`${table.vocab} vs llama.cpp ${table.llamaCpp} (node-llama-cpp ${table.nodeLlamaCpp})`, () => {
  const corpus = ugmCorpus();
  it('is the file the table was made from', () => {
    expect(crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex')).toBe(table.sha256);
  });
  it.each([
    ['built here', async () => loadTokenizerSync(file)],
    ['built off the JS thread, then from the packed cache', async () => (await loadTokenizer(file), loadTokenizer(file))],
  ])('%s: every string encodes and decodes as llama.cpp does', async (_name, load) => {
    const tok = await load();
    expect(tok.kind).toBe('unigram');
    const bad: string[] = [];
    corpus.forEach((text, i) => {
      const row = table.cases[i];
      const got = tok.encode(text, { addSpecialTokens: false });
      if (got.join(' ') !== row.ids) bad.push(`ids ${JSON.stringify(text)}: ${got.join(' ')} vs ${row.ids}`);
      const plain = tok.encode(text, { addSpecialTokens: false, parseSpecialTokens: false }).join(' ');
      if (plain !== (row.plain ?? row.ids)) bad.push(`plain ${JSON.stringify(text)}: ${plain} vs ${row.plain ?? row.ids}`);
      const wrapped = [table.bos, ...ids(row.ids), table.eos];
      if (tok.decode(wrapped, { skipSpecialTokens: true }) !== row.text) bad.push(`text ${JSON.stringify(text)}`);
      if (tok.decode(wrapped) !== row.special) bad.push(`special ${JSON.stringify(text)}`);
    });
    expect(bad.slice(0, 5)).toEqual([]);
    expect(tok.encode('hello')).toEqual([table.bos, ...tok.encode('hello', { addSpecialTokens: false }), table.eos]);
  });
  it('streams as it decodes', () => {
    const tok = loadTokenizerSync(file);
    for (const [i, row] of table.cases.entries()) {
      if (i % 7 !== 0) continue;
      const stream = tok.createStreamDecoder({ skipSpecialTokens: true });
      let text = '';
      for (const id of [table.bos, ...ids(row.ids), table.eos]) text += stream.push(id);
      expect(text + stream.flush()).toBe(row.text);
    }
  });
  it('left the packed tokenizer in the cache', () => {
    expect(fs.readdirSync(nodePath.join(cacheDir(), 'tokenizers')).some((f) => f.endsWith('.wmtok'))).toBe(true);
  });
});
