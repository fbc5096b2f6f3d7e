import * as fs from 'node:fs';
import * as path from 'node:path';
import { runCli } from '../helpers/cli';
import { fixture, tempDir } from '../helpers/fixtures';

describe('weightmap inspect', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  test('prints format, architecture, config and the tensor table', async () => {
    const r = await runCli(['inspect', fixture('tllm-tiny', 'model.tllm')]);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/format:\s+tllm/);
    expect(r.stdout).toMatch(/architecture:\s+tllm/);
    // 2 embeddings + 12 records per layer × 2 layers + the output projection.
    expect(r.stdout).toMatch(/tensors:\s+27 /);
    expect(r.stdout).toMatch(/hiddenSize: 64/);
  });

  test('--json gives the full report, tensors inside the file', async () => {
    const file = fixture('ajc1-qwen3-tiny', 'model.bin');
    const r = await runCli(['inspect', file, '--json']);
    expect(r.exitCode).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.format).toBe('ajc1');
    expect(report.architecture).toBe('qwen3');
    expect(report.config).toMatchObject({ hiddenSize: 64, intermediateSize: 192, numLayers: 2, numHeads: 4, numKvHeads: 2, vocabSize: 151936, headDim: 32, groupSize: 32 });
    const size = fs.statSync(file).size;
    for (const t of report.tensors) expect(t.offset + t.bytes).toBeLessThanOrEqual(size);
  });

  test('a bad file is one line on stderr with the error code, exit code 2', async () => {
    const bad = path.join(tmp.dir, 'bad.tllm');
    fs.writeFileSync(bad, fs.readFileSync(fixture('tllm-tiny', 'model.tllm')).subarray(0, 1000));
    const r = await runCli(['inspect', bad, '--json']);
    expect(r.exitCode).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^weightmap: TRUNCATED: /);
  });

  test('an unknown file is BAD_MAGIC, a missing one a usage error (both exit 2)', async () => {
    const junk = path.join(tmp.dir, 'junk.txt');
    fs.writeFileSync(junk, 'hello, this is not a model\n');
    const r1 = await runCli(['inspect', junk]);
    expect(r1.exitCode).toBe(2);
    expect(r1.stderr).toMatch(/BAD_MAGIC/);
    const r2 = await runCli(['inspect', path.join(tmp.dir, 'missing.bin')]);
    expect(r2.exitCode).toBe(2);
    expect(r2.stderr).toMatch(/no such file or folder/);
  });
});
