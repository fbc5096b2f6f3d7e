/**
 * The generate / chat / bench commands end to end on the fixtures: stories260K's greedy text
 * (llama2.c's golden output) from the .bin, the GGUF and the sepweight tree; the ajc1 Qwen3 chat.
 */
import * as fs from 'node:fs';
import { loadModel } from '../../lib/models/model';
import { runCli } from '../helpers/cli';
import { fixture, readJson } from '../helpers/fixtures';

const stories = (...p: string[]) => fixture('llama-stories260k', ...p);
const golden = fs.readFileSync(stories('expected_greedy_200steps.txt'), 'utf8');

describe('weightmap generate', () => {
  it.each([
    ['the llama2.c checkpoint (tok512.bin found beside it)', [stories('stories260K.bin')]],
    ['the llama2.c checkpoint with --tokenizer', [stories('stories260K.bin'), '--tokenizer', stories('tok512.bin')]],
    ['the GGUF (its own vocabulary)', [stories('stories260K.gguf')]],
    ['the sepweight tree (tokenizer named in config.json)', [stories('sepweight')]],
    ['the checkpoint with --speculative (prompt lookup)', [stories('stories260K.bin'), '--speculative']],
    ['the checkpoint with --draft-model (itself) and --draft-tokens', [stories('stories260K.bin'), '--draft-model', stories('stories260K.bin'), '--draft-tokens', '6']],
  ])('prints exactly llama2.c\'s greedy 200 tokens from %s', async (_name, model) => {
    const [path, ...rest] = model;
    const result = await runCli(['generate', path, '', '--temperature', '0', '--max-tokens', '200', '--threads', '1', ...rest]);
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe(golden);
  });

  it('ends the text with a newline on a terminal, and only there', async () => {
    const args = ['generate', stories('stories260K.bin'), '', '--temperature', '0', '--max-tokens', '20', '--threads', '1'];
    const piped = await runCli(args);
    const descriptor = Object.getOwnPropertyDescriptor(process.stdout, 'isTTY');
    Object.defineProperty(process.stdout, 'isTTY', { value: true, configurable: true });
    let terminal;
    try {
      terminal = await runCli(args);
    } finally {
      if (descriptor) Object.defineProperty(process.stdout, 'isTTY', descriptor);
      else delete (process.stdout as { isTTY?: boolean }).isTTY;
    }
    expect(piped.stdout.length).toBeGreaterThan(0);
    expect(golden.startsWith(piped.stdout)).toBe(true);
    expect(piped.stdout.endsWith('\n')).toBe(false);
    expect(terminal.stdout).toBe(`${piped.stdout}\n`);
  });

  it('prints the generated ids with --ids', async () => {
    const expected = readJson('llama-stories260k', 'expected.json').greedy.tokens as number[];
    const result = await runCli(['generate', stories('stories260K.bin'), '', '--max-tokens', '20', '--ids', '--threads', '1']);
    expect(result.stdout).toBe(`${expected.slice(0, 20).join(' ')}\n`);
  });

  it("reads the prompt from stdin with '-' and prints only the continuation", async () => {
    const prompt = 'Once upon a time,';
    const result = await runCli(['generate', stories('stories260K.bin'), '-', '--max-tokens', '30', '--threads', '1'], prompt);
    expect(result.stdout.length).toBeGreaterThan(0);
    expect(golden.startsWith(prompt + result.stdout)).toBe(true);
  });

  it('stops before a stop string and does not print it', async () => {
    const result = await runCli(['generate', stories('stories260K.bin'), '', '--max-tokens', '200', '--stop', 'Lily.', '--threads', '1']);
    expect(result.stdout).toBe(golden.slice(0, golden.indexOf('Lily.')));
  });

  it('reports bad options and files with an exit code', async () => {
    const bad = await runCli(['generate', stories('stories260K.bin'), '', '--top-p', '2']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/'--top-p <p>' argument '2' is invalid/);
    const missing = await runCli(['generate', stories('nope.bin'), 'x']);
    expect(missing.exitCode).not.toBe(0);
    expect(missing.stdout).toBe('');
  });
});

describe('weightmap chat', () => {
  it('answers a line of stdin with the Qwen3 template and stops at /exit', async () => {
    const c = readJson('ajc1-qwen3-tiny', 'expected.json').cases[0];
    const reply = (c.greedy.text as string).replace('<|im_end|>', '');
    const result = await runCli(['chat', fixture('ajc1-qwen3-tiny', 'model.bin'), '--threads', '1', '--max-tokens', '24'], `${c.prompt.user_text}\n/exit\nnot read\n`);
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe(`${reply}\n`);
  });
});

describe('weightmap chat, two turns', () => {
  it('keeps the conversation: the second reply is the model\'s reply to both turns', async () => {
    const c = readJson('ajc1-qwen3-tiny', 'expected.json').cases[0];
    const path = fixture('ajc1-qwen3-tiny', 'model.bin');
    const result = await runCli(['chat', path, '--threads', '1', '--max-tokens', '24', '--system', 'Be brief.'], `${c.prompt.user_text}\n\nAnd in Rome?\n`);
    expect(result.stderr).toBe('');
    const [first, second, rest] = result.stdout.split('\n');
    expect(rest).toBe('');
    const model = await loadModel(path, { threads: 1 });
    try {
      const messages = [
        { role: 'system' as const, content: 'Be brief.' },
        { role: 'user' as const, content: c.prompt.user_text },
      ];
      expect(first).toBe(await model.chat(messages, { maxTokens: 24 }).text());
      const both = [...messages, { role: 'assistant' as const, content: first }, { role: 'user' as const, content: 'And in Rome?' }];
      expect(second).toBe(await model.chat(both, { maxTokens: 24 }).text());
    } finally {
      model.dispose();
    }
  });
});

describe('weightmap bench', () => {
  it('reports prefill and decode speed with their spread, threads and ISA', async () => {
    const result = await runCli(['bench', stories('stories260K.bin'), '--prompt-tokens', '32', '--gen-tokens', '16', '--repetitions', '3', '--threads', '1', '--json']);
    expect(result.stderr).toBe('');
    const report = JSON.parse(result.stdout);
    expect(report).toMatchObject({ format: 'llama2c', architecture: 'llama', threads: 1, promptTokens: 32, genTokens: 16, repetitions: 3 });
    expect(typeof report.isa).toBe('string');
    for (const s of [report.prefill, report.decode]) {
      expect(s.min).toBeGreaterThan(0);
      expect(s.min).toBeLessThanOrEqual(s.median);
      expect(s.median).toBeLessThanOrEqual(s.max);
    }
    const text = await runCli(['bench', stories('stories260K.bin'), '--prompt-tokens', '8', '--gen-tokens', '4', '--repetitions', '1', '--threads', '1']);
    expect(text.stdout).toMatch(/prefill: 8 tokens: [\d.]+ tok\/s \(min [\d.]+, max [\d.]+\)/);
    expect(text.stdout).toMatch(/threads: 1, isa: \w+/);
  });

  it('with a draft model: every guess of a model drafting for itself is kept, each pass emitting the guesses and one token', async () => {
    const path = stories('stories260K.bin');
    const result = await runCli(['bench', path, '--prompt-tokens', '16', '--gen-tokens', '40', '--repetitions', '2', '--threads', '1', '--draft-model', path, '--draft-tokens', '4', '--json']);
    expect(result.stderr).toBe('');
    const { speculative: s } = JSON.parse(result.stdout);
    expect(s.drafted).toBeGreaterThan(0);
    expect(s.accepted).toBe(s.drafted);
    expect(s.acceptance).toBe(1);
    expect(s.passes + s.accepted).toBe(s.emitted);
    expect(s.tokensPerPass).toBeCloseTo(s.emitted / s.passes, 10);
  });

  it('shrinks the default lengths to a shorter context and says so; lengths given stay or fail', async () => {
    // stories260K holds 512 positions: the defaults 512 + 128 become 410 + 102 (their proportion).
    const result = await runCli(['bench', stories('stories260K.bin'), '--repetitions', '1', '--threads', '1', '--json']);
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toBe('weightmap bench: the context holds 512 positions: --prompt-tokens 410 --gen-tokens 102 (defaults 512 and 128 shrunk to fit)\n');
    expect(JSON.parse(result.stdout)).toMatchObject({ promptTokens: 410, genTokens: 102 });
    const genGiven = await runCli(['bench', stories('stories260K.bin'), '--gen-tokens', '12', '--repetitions', '1', '--threads', '1', '--json']);
    expect(JSON.parse(genGiven.stdout)).toMatchObject({ promptTokens: 500, genTokens: 12 });
    const tooLong = await runCli(['bench', stories('stories260K.bin'), '--prompt-tokens', '500', '--gen-tokens', '100', '--threads', '1']);
    expect(tooLong.exitCode).not.toBe(0);
    expect(tooLong.stderr).toMatch(/contextLength 600 exceeds this model's maximum 512/);
  });
});
