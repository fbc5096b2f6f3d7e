/**
 * A conversion never destroys a file: an output that resolves to anything it reads (the same path,
 * a hard link, a symlink, a file inside a folder input, a sidecar) is refused before anything is
 * written, and every write goes to a temporary beside its destination that is renamed into place
 * only once complete, so an error or an abort leaves the destination as it was and no temporary.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { convert } from '../../lib/formats/writing/convert';
import { AbortError, OutputIsInputError } from '../../lib/base/errors';
import { runCli } from '../helpers/cli';
import { fixture } from '../helpers/fixtures';
import { testWorkspace } from '../helpers/workspace';

const BIN = fixture('llama-stories260k', 'stories260K.bin');
const TOK = fixture('llama-stories260k', 'tok512.bin');
const GGUF = fixture('llama-stories260k', 'stories260K.gguf');
const AJC1 = fixture('ajc1-qwen3-tiny', 'model.bin');
const TLLM = fixture('tllm-tiny', 'model.tllm');

const { fresh } = testWorkspace('weightmap-atomic-');

/** A folder holding copies of `files` (name -> source), returned with the copies' paths. */
function folderWith(files: Record<string, string>): { dir: string; at: (name: string) => string } {
  const dir = fresh('dir');
  fs.mkdirSync(dir);
  for (const [name, src] of Object.entries(files)) fs.copyFileSync(src, path.join(dir, name));
  return { dir, at: (name) => path.join(dir, name) };
}

const digest = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Every file under `dir` with the SHA-256 of its bytes, to compare a folder before and after. */
function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.set(path.relative(dir, p), e.isSymbolicLink() ? `-> ${fs.readlinkSync(p)}` : digest(fs.readFileSync(p)));
    }
  };
  walk(dir);
  return out;
}

/** convert(input, output) fails with OutputIsInputError naming `named` (the output, or a file the writer puts beside it), `guarded` unchanged. */
async function expectRefused(input: string, output: string, to: Parameters<typeof convert>[2]['to'], guarded: string, named = output): Promise<void> {
  const before = snapshot(guarded);
  const error = await convert(input, output, { to }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(OutputIsInputError);
  expect(error).toMatchObject({ code: 'ERR_WEIGHTMAP_OUTPUT_IS_INPUT', output: named });
  expect(snapshot(guarded)).toEqual(before);
}

describe('an output that resolves to an input is refused, the input untouched', () => {
  test('the same path: llama2.c -> llama2.c and GGUF -> GGUF', async () => {
    const { dir, at } = folderWith({ 'a.bin': BIN, 'x.gguf': GGUF });
    await expectRefused(at('a.bin'), at('a.bin'), 'llama2c', dir);
    await expectRefused(at('x.gguf'), at('x.gguf'), 'gguf', dir);
    // The same file spelled another way.
    await expectRefused(at('a.bin'), path.join(dir, '.', 'sub', '..', 'a.bin'), 'gguf', dir);
  });

  test('a hard link and a symlink to the input, and the input reached through a symlinked folder', async () => {
    const { dir, at } = folderWith({ 'a.bin': BIN });
    fs.linkSync(at('a.bin'), at('hard.bin'));
    fs.symlinkSync(at('a.bin'), at('soft.bin'));
    await expectRefused(at('a.bin'), at('hard.bin'), 'llama2c', dir);
    await expectRefused(at('a.bin'), at('soft.bin'), 'gguf', dir);
    const alias = fresh('alias');
    fs.symlinkSync(dir, alias);
    await expectRefused(at('a.bin'), path.join(alias, 'a.bin'), 'llama2c', dir);
  });

  test('a file inside a folder input: a safetensors folder and a sepweight tree', async () => {
    const hf = fresh('hf');
    await convert(TLLM, path.join(hf, 'model.safetensors'), { to: 'safetensors' });
    // The folder's config.json is staged first: it is the file named.
    await expectRefused(hf, path.join(hf, 'model.safetensors'), 'safetensors', hf, path.join(hf, 'config.json'));
    await expectRefused(hf, path.join(hf, 'config.json'), 'tllm', hf);
    const tree = fresh('tree');
    await convert(BIN, tree, { to: 'sepweight' });
    await expectRefused(tree, path.join(tree, 'mid', '0', 'mlp.down_proj.weight.npy'), 'gguf', tree);
    await expectRefused(tree, path.join(tree, 'tokenizer.bin'), 'llama2c', tree);
    // A sepweight output that is (or holds) the input tree.
    await expectRefused(tree, tree, 'sepweight', tree);
  });

  test('sidecars: a llama2.c tokenizer.bin, an ajc1 .tokenizer and .template, and a sidecar the writer produces', async () => {
    const l = folderWith({ 'stories.bin': BIN, 'tokenizer.bin': TOK });
    await expectRefused(l.at('stories.bin'), l.at('tokenizer.bin'), 'gguf', l.dir);
    const q = folderWith({ 'model.bin': AJC1, 'model.bin.tokenizer': `${AJC1}.tokenizer`, 'model.bin.template': `${AJC1}.template` });
    await expectRefused(q.at('model.bin'), q.at('model.bin.tokenizer'), 'gguf', q.dir);
    await expectRefused(q.at('model.bin'), q.at('model.bin.template'), 'sepweight', q.dir);
    // ajc1 -> ajc1 elsewhere, where the output's .tokenizer is a hard link to the input's.
    const elsewhere = fresh('elsewhere');
    fs.mkdirSync(elsewhere);
    fs.linkSync(q.at('model.bin.tokenizer'), path.join(elsewhere, 'copy.bin.tokenizer'));
    await expectRefused(q.at('model.bin'), path.join(elsewhere, 'copy.bin'), 'ajc1', q.dir, path.join(elsewhere, 'copy.bin.tokenizer'));
    expect(fs.readdirSync(elsewhere)).toEqual(['copy.bin.tokenizer']);
  });

  test('the CLI: one line naming both paths, exit code 2, the input intact', async () => {
    const { dir, at } = folderWith({ 'a.bin': BIN });
    const before = snapshot(dir);
    const r = await runCli(['convert', at('a.bin'), at('a.bin'), '--to', 'llama2c', '--no-progress']);
    expect(r.exitCode).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(`weightmap: ERR_WEIGHTMAP_OUTPUT_IS_INPUT: the output ${at('a.bin')} would replace ${at('a.bin')}`);
    expect(snapshot(dir)).toEqual(before);
  });
});

describe('writes are staged and renamed into place', () => {
  const OLD = Buffer.from('the destination before the conversion\n');

  /** A folder with an existing destination `name` (and an unrelated file), returned with its paths. */
  function destination(name: string): { dir: string; out: string } {
    const dir = fresh('out');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, name), OLD);
    fs.writeFileSync(path.join(dir, 'unrelated.txt'), 'keep me');
    return { dir, out: path.join(dir, name) };
  }

  test('an abort mid-write leaves the destination as it was and no temporary (file, sidecars, folder)', async () => {
    for (const [src, to, name] of [
      [BIN, 'gguf', 'model.gguf'],
      [AJC1, 'ajc1', 'model.bin'],
      [TLLM, 'safetensors', 'model.safetensors'],
    ] as const) {
      const { dir, out } = destination(name);
      const before = snapshot(dir);
      const ac = new AbortController();
      let reported = 0;
      const run = convert(src, out, { to, signal: ac.signal, onProgress: (p) => (reported = p.bytesWritten) > 4096 && ac.abort() });
      await expect(run).rejects.toBeInstanceOf(AbortError);
      expect(reported).toBeGreaterThan(4096);
      expect([to, snapshot(dir)]).toEqual([to, before]);
    }
    // A folder output: the tree never appears, and nothing is left beside it.
    const parent = fresh('tree-parent');
    fs.mkdirSync(parent);
    const ac = new AbortController();
    const run = convert(BIN, path.join(parent, 'tree'), { to: 'sepweight', signal: ac.signal, onProgress: (p) => p.bytesWritten > 4096 && ac.abort() });
    await expect(run).rejects.toBeInstanceOf(AbortError);
    expect(fs.readdirSync(parent)).toEqual([]);
  });

  test('a writer error mid-write leaves the destination as it was and no temporary', async () => {
    const { dir, out } = destination('model.tllm');
    const before = snapshot(dir);
    const failure = new Error('disk full (simulated)');
    const run = convert(TLLM, out, {
      to: 'tllm',
      onProgress: (p) => {
        if (p.bytesWritten > 1000) throw failure;
      },
    });
    await expect(run).rejects.toBe(failure);
    expect(snapshot(dir)).toEqual(before);
    // A destination folder the write had to create is removed again.
    const deep = path.join(fresh('new'), 'a', 'b', 'model.tllm');
    await expect(convert(TLLM, deep, { to: 'tllm', onProgress: () => { throw failure; } })).rejects.toBe(failure);
    expect(fs.existsSync(path.dirname(path.dirname(path.dirname(deep))))).toBe(false);
  });

  test('a finished write replaces the destination with the whole new file and leaves no temporary', async () => {
    const { dir, out } = destination('model.tllm');
    await convert(TLLM, out, { to: 'tllm' });
    expect(fs.readFileSync(out).equals(fs.readFileSync(TLLM))).toBe(true);
    expect(fs.readdirSync(dir).sort()).toEqual(['model.tllm', 'unrelated.txt']);
  });
});
