/**
 * The Unigram tokenizer against sentencepiece itself (Debian's `sentencepiece` package: spm_train,
 * spm_encode): a Unigram model trained here, under a temp folder, on the multilingual text, with
 * and without byte fallback (default nmt_nfkc normalization, so the model has a precompiled
 * charsmap); its `.model` converted to tokenizer.json by lib/tokenizers/sentencepiece-model.ts;
 * then, over the shared corpus plus multilingual lines, ours = HF's Rust tokenizer on that
 * tokenizer.json = `spm_encode --output_format=id` on the `.model`, token for token, except on the
 * lines where HF's tokenizer.json semantics differ from sentencepiece's by design (SPM_DIFFERS).
 * Skipped, saying so, where spm_train is not installed.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as nodePath from 'node:path';
import { Tokenizer as HfTokenizer } from '@anush008/tokenizers';
import { tokenizerFromJson, type Tokenizer } from '../../lib/tokenizers';
import { loadTokenizer, loadTokenizerSync } from '../../lib/tokenizer-loading';
import { readSentencePieceModel, sentencePieceModelToTokenizerJson } from '../../lib/tokenizers/sentencepiece-model';
import { makeCorpus } from './corpus';
import { compareDecode, compareEncode, useTempTokenizerCache } from './family-compare';
import { multilingualLines } from './multilingual';

const HAVE_SPM = spawnSync('spm_train', ['--help'], { stdio: 'ignore' }).error === undefined;
if (!HAVE_SPM) console.warn('unigram-sentencepiece.test.ts: spm_train not found (apt-get install sentencepiece): the sentencepiece comparison is skipped');

const cacheDir = useTempTokenizerCache();

/** One line per case (spm_encode reads lines): the corpus split at newlines. */
const lines = [...makeCorpus(2000), ...multilingualLines(1000, 77)].flatMap((s) => s.split('\n'));

(HAVE_SPM ? describe : describe.skip).each([false, true])('sentencepiece Unigram model (byte_fallback=%s) vs HF tokenizers and spm_encode', (byteFallback) => {
  let dir = '';
  let json: any;
  let ours: Tokenizer;
  let hf: HfTokenizer;
  let spmIds: number[][];
  beforeAll(() => {
    dir = fs.mkdtempSync(nodePath.join(os.tmpdir(), 'weightmap-spm-'));
    fs.writeFileSync(nodePath.join(dir, 'train.txt'), multilingualLines(20000, 1).join('\n') + '\n');
    const prefix = nodePath.join(dir, 'u');
    execFileSync('spm_train', [`--input=${nodePath.join(dir, 'train.txt')}`, `--model_prefix=${prefix}`, '--vocab_size=3000', '--model_type=unigram', `--byte_fallback=${byteFallback}`, '--num_threads=2', '--minloglevel=2'], { stdio: 'ignore' });
    json = sentencePieceModelToTokenizerJson(readSentencePieceModel(fs.readFileSync(`${prefix}.model`), `${prefix}.model`), `${prefix}.model`);
    ours = tokenizerFromJson(json, 'converted');
    hf = HfTokenizer.fromString(JSON.stringify(json));
    fs.writeFileSync(nodePath.join(dir, 'lines.txt'), lines.join('\n') + '\n');
    const out = execFileSync('spm_encode', [`--model=${prefix}.model`, '--output_format=id', `--input=${nodePath.join(dir, 'lines.txt')}`], { maxBuffer: 1 << 28 }).toString('utf8');
    spmIds = out.split('\n').slice(0, lines.length).map((l) => (l.trim() === '' ? [] : l.trim().split(' ').map(Number)));
  }, 120_000);
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('ours and HF agree on every line', async () => {
    const { total, bad } = await compareEncode(ours, hf, lines, true);
    expect(bad).toEqual([]);
    expect(total).toBe(lines.length);
    expect((await compareDecode(ours, hf, lines.slice(0, 1500))).bad).toEqual([]);
  });
  it('ours and spm_encode agree, except where tokenizer.json semantics differ by design (each line classified independently of ours)', async () => {
    const prefix = nodePath.join(dir, 'u');
    const spmNormalized = execFileSync('spm_normalize', [`--model=${prefix}.model`, '--use_internal_normalization=true', nodePath.join(dir, 'lines.txt')], { maxBuffer: 1 << 28 })
      .toString('utf8')
      .split('\n');
    const hfTokens = (await hf.encodeBatch(lines, { addSpecialTokens: true })).map((e) => e.getTokens());
    const scores: number[] = json.model.vocab.map((p: [string, number]) => p[1]);
    const unkScore = Math.min(...scores) - 10;
    const pathScore = (ids: number[]) => ids.reduce((sum, id) => sum + (id === json.model.unk_id ? unkScore : /^<0x[0-9A-F]{2}>$/.test(json.model.vocab[id][0]) ? 0 : scores[id]), 0);
    /** HF's normalized text: its tokens' surfaces (a run of <0xNN> pieces as its bytes). */
    const surface = (tokens: string[]) => {
      const bytes: number[] = [];
      for (const t of tokens) {
        const m = /^<0x([0-9A-F]{2})>$/.exec(t);
        if (m) bytes.push(parseInt(m[1], 16));
        else bytes.push(...Buffer.from(t, 'utf8'));
      }
      return Buffer.from(bytes).toString('utf8');
    };
    const literal = new RegExp(json.model.vocab.filter((p: [string, number], id: number) => id === json.model.unk_id || json.added_tokens.some((a: any) => a.id === id) || /^<0x[0-9A-F]{2}>$/.test(p[0])).map((p: [string, number]) => p[0].replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'));
    const counts = { same: 0, literalPieceText: 0, normalization: 0, floatTie: 0, unexplained: 0 };
    const shown: string[] = [];
    lines.forEach((line, i) => {
      const got = ours.encode(line);
      const want = spmIds[i];
      if (JSON.stringify(got) === JSON.stringify(want)) return void counts.same++;
      let why: keyof typeof counts;
      if (literal.test(line)) why = 'literalPieceText';
      else if (surface(hfTokens[i]) !== (spmNormalized[i] ?? '')) why = 'normalization';
      else if (Math.abs(pathScore(got) - pathScore(want)) < 1e-3) why = 'floatTie';
      else why = 'unexplained';
      counts[why]++;
      if (why !== 'literalPieceText' && shown.filter((x) => x.startsWith(why)).length < 3) shown.push(`${why} ${JSON.stringify(line).slice(0, 100)}\n  hf normalized  ${JSON.stringify(surface(hfTokens[i])).slice(0, 100)}\n  spm normalized ${JSON.stringify(spmNormalized[i]).slice(0, 100)}\n  ours ${JSON.stringify(got).slice(0, 120)}\n  spm  ${JSON.stringify(want).slice(0, 120)}`);
    });
    console.log(`byte_fallback=${byteFallback}: ${lines.length} lines: ${JSON.stringify(counts)}\n${shown.join('\n')}`);
    expect(counts.unexplained).toBe(0);
    expect(counts.same).toBeGreaterThan(lines.length * 0.9);
  });
  it('loadTokenizer reads the .model itself (a folder with sentencepiece.bpe.model, or the file), in the worker and from the cache, as the converted tokenizer.json encodes', async () => {
    const folder = nodePath.join(dir, 'xlmr-like');
    fs.mkdirSync(folder);
    fs.copyFileSync(nodePath.join(dir, 'u.model'), nodePath.join(folder, 'sentencepiece.bpe.model'));
    const sample = lines.slice(0, 800);
    const expected = sample.map((l) => ours.encode(l));
    for (let round = 0; round < 2; round++) {
      const loaded = await loadTokenizer(folder);
      expect(loaded.kind).toBe('unigram');
      expect(sample.map((l) => loaded.encode(l))).toEqual(expected);
    }
    expect(fs.readdirSync(nodePath.join(cacheDir(), 'tokenizers')).some((f) => f.endsWith('.wmtok'))).toBe(true);
    const direct = loadTokenizerSync(nodePath.join(dir, 'u.model'));
    expect(sample.map((l) => direct.encode(l))).toEqual(expected);
  });
});
