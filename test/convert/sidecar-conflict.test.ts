/**
 * Files a writer puts beside its output (a safetensors file's config.json and tokenizer files, a
 * llama2.c checkpoint's tokenizer.bin) never replace those of another model in that folder: the
 * write is refused before anything is written (SidecarConflictError; the CLI: one line, exit code
 * 2), unless forced. Replacing the destination's own sidecars, or writing identical ones, is no
 * conflict. An output that names a folder (OUT/, or an existing folder) gets the format's file
 * inside it.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { convert } from '../../lib/formats/writing/convert';
import { SidecarConflictError } from '../../lib/base/errors';
import { readWeights } from '../../lib/formats';
import { closeWeights } from '../../lib/addon/weights';
import { runCli } from '../helpers/cli';
import { fixture } from '../helpers/fixtures';
import { testWorkspace } from '../helpers/workspace';

const STORIES = fixture('llama-stories260k', 'stories260K.gguf');
const QWEN3 = fixture('ajc1-qwen3-tiny', 'model.bin');
const { fresh } = testWorkspace('weightmap-sidecars-');

const digest = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out[path.relative(dir, p)] = digest(fs.readFileSync(p));
    }
  };
  walk(dir);
  return out;
}

/** The first model reads back whole: its config.json still describes its weights. */
async function readsBack(file: string, source: string): Promise<void> {
  const [w, s] = [await readWeights(file), await readWeights(source)];
  try {
    const shape = (c: object) => ({ ...c }) as { architecture: string; numLayers?: number; hiddenSize?: number };
    const [a, b] = [shape(w.config), shape(s.config)];
    expect({ architecture: a.architecture, layers: a.numLayers, hidden: a.hiddenSize, tensors: w.tensors.length }).toEqual({
      architecture: b.architecture,
      layers: b.numLayers,
      hidden: b.hiddenSize,
      tensors: s.tensors.length,
    });
  } finally {
    closeWeights(w);
    closeWeights(s);
  }
}

describe('a safetensors output beside another model', () => {
  test('stories260K then a Qwen3 into one folder: refused, the first model intact and readable; forced: written', async () => {
    const dir = fresh('models');
    const first = path.join(dir, 'stories.safetensors');
    await convert(STORIES, first, { to: 'safetensors' });
    const before = snapshot(dir);
    expect(Object.keys(before)).toContain('config.json');
    const error = await convert(QWEN3, path.join(dir, 'qwen3.safetensors'), { to: 'safetensors' }).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(SidecarConflictError);
    expect(error).toMatchObject({ code: 'ERR_WEIGHTMAP_SIDECAR_CONFLICT', output: path.join(dir, 'qwen3.safetensors'), owner: first });
    expect(snapshot(dir)).toEqual(before);
    await readsBack(first, STORIES);

    await convert(QWEN3, path.join(dir, 'qwen3.safetensors'), { to: 'safetensors', force: true });
    expect(fs.readdirSync(dir)).toContain('qwen3.safetensors');
    await readsBack(path.join(dir, 'qwen3.safetensors'), QWEN3);
  });

  test('no conflict: the same model twice (identical sidecars), and replacing the destination with another model', async () => {
    const dir = fresh('models');
    await convert(STORIES, path.join(dir, 'a.safetensors'), { to: 'safetensors' });
    await convert(STORIES, path.join(dir, 'b.safetensors'), { to: 'safetensors' });
    expect(fs.readFileSync(path.join(dir, 'a.safetensors')).equals(fs.readFileSync(path.join(dir, 'b.safetensors')))).toBe(true);
    const alone = fresh('alone');
    await convert(STORIES, path.join(alone, 'model.safetensors'), { to: 'safetensors' });
    // The sidecars belong to the destination being replaced: no other weight file is in the folder.
    await convert(QWEN3, path.join(alone, 'model.safetensors'), { to: 'safetensors' });
    await readsBack(path.join(alone, 'model.safetensors'), QWEN3);
  });

  test('a stray config.json of no model beside a new destination is not replaced unless forced', async () => {
    const dir = fresh('stray');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'config.json'), '{"mine": true}\n');
    await expect(convert(STORIES, path.join(dir, 'model.safetensors'), { to: 'safetensors' })).rejects.toMatchObject({ owner: undefined });
    expect(fs.readdirSync(dir)).toEqual(['config.json']);
    expect(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')).toBe('{"mine": true}\n');
  });

  test('the CLI: one line naming both files, exit code 2, nothing written; --force writes', async () => {
    const dir = fresh('cli');
    await convert(STORIES, path.join(dir, 'stories.safetensors'), { to: 'safetensors' });
    const before = snapshot(dir);
    const args = ['convert', QWEN3, path.join(dir, 'qwen3.safetensors'), '--to', 'safetensors', '--no-progress'];
    const refused = await runCli(args);
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr.trimEnd().split('\n')).toEqual([
      `weightmap: ERR_WEIGHTMAP_SIDECAR_CONFLICT: writing ${path.join(dir, 'qwen3.safetensors')} would replace ${path.join(dir, 'config.json')}, which belongs to ${path.join(dir, 'stories.safetensors')}; write to another folder, or force the replacement (--force, { force: true })`,
    ]);
    expect(snapshot(dir)).toEqual(before);
    const forced = await runCli([...args, '--force']);
    expect(forced).toMatchObject({ exitCode: 0, stderr: '' });
    expect(fs.existsSync(path.join(dir, 'qwen3.safetensors'))).toBe(true);
  });
});

describe('an output that names a folder', () => {
  test('OUT/ (new) and an existing folder get the format file inside; a sepweight OUT/ is the tree itself', async () => {
    const parent = fresh('parent');
    const r = await runCli(['convert', STORIES, `${path.join(parent, 'new')}/`, '--to', 'gguf', '--no-progress']);
    expect(r).toMatchObject({ exitCode: 0, stderr: '' });
    expect(fs.readdirSync(path.join(parent, 'new'))).toEqual(['model.gguf']);
    expect(fs.readFileSync(path.join(parent, 'new', 'model.gguf')).equals(fs.readFileSync(STORIES))).toBe(true);

    const existing = fresh('existing');
    fs.mkdirSync(existing);
    const result = await convert(STORIES, existing, { to: 'safetensors' });
    expect(result.output).toBe(path.join(existing, 'model.safetensors'));
    expect(fs.readdirSync(existing)).toContain('model.safetensors');
    await readsBack(existing, STORIES); // the folder reads as a Hugging Face model folder

    const tree = `${fresh('tree')}/`;
    await convert(STORIES, tree, { to: 'sepweight' });
    expect(fs.readdirSync(tree)).toContain('mid');
  });

  test('OUT/ where OUT is a file: one line, exit code 2, the file untouched', async () => {
    const file = fresh('model.gguf');
    fs.writeFileSync(file, 'not a folder\n');
    const r = await runCli(['convert', STORIES, `${file}/`, '--to', 'gguf', '--no-progress']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr.trimEnd().split('\n')).toEqual([`weightmap: ERR_OUT_OF_RANGE: the output ${file}/ names a folder, but ${file} is a file`]);
    expect(fs.readFileSync(file, 'utf8')).toBe('not a folder\n');
  });
});
