/** `weightmap convert IN OUT --to FORMAT [--quant q8_0] [--group-size N]` (lib/cli/convert.ts). */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runCli } from '../helpers/cli';
import { fixture, tempDir } from '../helpers/fixtures';
import { sameBytes } from './helpers';

const TLLM = fixture('tllm-tiny', 'model.tllm');
const BIN = fixture('llama-stories260k', 'stories260K.bin');

const tmp = tempDir('weightmap-cli-convert-');
afterAll(() => tmp.cleanup());

describe('weightmap convert', () => {
  test('TLLM -> safetensors folder -> TLLM: exit 0, nothing on stdout, the original file back', async () => {
    const hf = path.join(tmp.dir, 'tllm-hf');
    const first = await runCli(['convert', TLLM, path.join(hf, 'model.safetensors'), '--to', 'safetensors', '--no-progress']);
    expect(first).toEqual({ stdout: '', stderr: '', exitCode: 0 });
    expect(fs.readdirSync(hf).sort()).toEqual(['config.json', 'model.safetensors']);
    const back = path.join(tmp.dir, 'back.tllm');
    const second = await runCli(['convert', hf, back, '--to', 'tllm']);
    expect(second.exitCode).toBe(0);
    expect(sameBytes(TLLM, back).firstDifference).toBe(-1);
  });

  test('llama2.c -> sepweight -> llama2.c with the input format named', async () => {
    const tree = path.join(tmp.dir, 'tree');
    expect((await runCli(['convert', BIN, tree, '--to', 'sepweight', '--from', 'llama2c'])).exitCode).toBe(0);
    const back = path.join(tmp.dir, 'back.bin');
    expect((await runCli(['convert', tree, back, '--to', 'llama2c', '--from', 'sepweight'])).exitCode).toBe(0);
    expect(sameBytes(BIN, back).firstDifference).toBe(-1);
  });

  test('a truncated input: one line on stderr with the error code, exit code 2, no output file', async () => {
    const bad = path.join(tmp.dir, 'bad.tllm');
    fs.writeFileSync(bad, fs.readFileSync(TLLM).subarray(0, 5000));
    const out = path.join(tmp.dir, 'never.safetensors');
    const r = await runCli(['convert', bad, out, '--to', 'safetensors']);
    expect(r.exitCode).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^weightmap: TRUNCATED: /);
    expect(fs.existsSync(out)).toBe(false);
  });

  test('options the output format cannot honour, and an unknown format: usage errors, exit code 2 and why', async () => {
    const out = path.join(tmp.dir, 'x.tllm');
    const quant = await runCli(['convert', TLLM, out, '--to', 'tllm', '--quant', 'q8_0']);
    expect(quant.exitCode).toBe(2);
    expect(quant.stderr).toMatch(/TLLM \(tiny_llama\) stores no q8_0 weights/);
    const group = await runCli(['convert', TLLM, out, '--to', 'tllm', '--group-size', '32']);
    expect(group.exitCode).toBe(2);
    expect(group.stderr).toMatch(/group size does not apply/);
    const unknown = await runCli(['convert', TLLM, out, '--to', 'onnx']);
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr).toMatch(/'--to <format>' argument 'onnx' is invalid\. expected one of /);
    expect(fs.existsSync(out)).toBe(false);
  });
});
