/**
 * `weightmap bench MODEL [--prompt-tokens 512 --gen-tokens 128 --repetitions 3 --threads N --json]`:
 * prefill and decode speed in tokens per second (median, min and max over the repetitions, after
 * one untimed warm-up run that also pages the weights in), with the threads and kernel ISA used.
 */
import type { Command } from 'commander';
import { loadModel, type Model } from '../model';
import { addModelOptions, modelOptions } from './model-options';
import { action, existingPath, intOption } from './run-command';
import { rangeError } from '../errors';

export interface BenchStats {
  median: number;
  min: number;
  max: number;
}

export interface BenchReport {
  model: string;
  format: string;
  architecture: string;
  threads: number;
  isa: string;
  loadMs: number;
  promptTokens: number;
  genTokens: number;
  repetitions: number;
  /** tokens per second */
  prefill: BenchStats;
  decode: BenchStats;
}

function stats(values: number[]): BenchStats {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return { median, min: sorted[0], max: sorted[sorted.length - 1] };
}

/** Deterministic prompt ids spread over the vocabulary, avoiding the stop tokens. */
function promptIds(model: Model, n: number): number[] {
  const stops = new Set(model.stopTokens);
  const ids: number[] = [];
  for (let i = 0; ids.length < n; i++) {
    const id = (i * 7919 + 13) % model.vocabSize;
    if (!stops.has(id)) ids.push(id);
  }
  return ids;
}

/** One timed run: a prefill of the prompt from position 0, then `gen` greedy tokens one at a time. */
async function run(model: Model, ids: number[], gen: number): Promise<{ prefill: number; decode: number }> {
  let t0 = process.hrtime.bigint();
  await model.logits(ids);
  const prefillS = Number(process.hrtime.bigint() - t0) / 1e9;
  // The session keeps the prompt: generation re-feeds only its last token, then one token per step.
  t0 = process.hrtime.bigint();
  const generation = model.generate(ids, { temperature: 0, maxTokens: gen, stopTokens: [] });
  let count = 0;
  for await (const _piece of generation) count++;
  const decodeS = Number(process.hrtime.bigint() - t0) / 1e9;
  return { prefill: ids.length / prefillS, decode: count / decodeS };
}

export async function benchModel(
  path: string,
  options: { promptTokens: number; genTokens: number; repetitions: number; threads?: number; contextLength?: number; quant?: string; tokenizer?: string },
): Promise<BenchReport> {
  const { promptTokens, genTokens, repetitions } = options;
  const model = await loadModel(path, {
    ...(options.tokenizer !== undefined ? { tokenizer: options.tokenizer } : {}),
    ...(options.threads !== undefined ? { threads: options.threads } : {}),
    ...(options.quant !== undefined ? { quant: options.quant as 'none' | 'q8_0' | 'f32' } : {}),
    contextLength: options.contextLength ?? promptTokens + genTokens,
  });
  try {
    if (promptTokens + genTokens > model.contextLength) {
      throw rangeError(`--prompt-tokens + --gen-tokens (${promptTokens + genTokens}) exceed the context length ${model.contextLength}`);
    }
    const ids = promptIds(model, promptTokens);
    await run(model, ids, Math.min(genTokens, 8)); // warm-up: pages the weights in
    const prefill: number[] = [];
    const decode: number[] = [];
    for (let r = 0; r < repetitions; r++) {
      const result = await run(model, ids, genTokens);
      prefill.push(result.prefill);
      decode.push(result.decode);
    }
    return {
      model: model.info.path,
      format: model.info.format,
      architecture: model.info.architecture,
      threads: model.info.threads,
      isa: model.info.isa,
      loadMs: model.info.loadMs,
      promptTokens,
      genTokens,
      repetitions,
      prefill: stats(prefill),
      decode: stats(decode),
    };
  } finally {
    model.dispose();
  }
}

function renderBench(r: BenchReport): string {
  const fmt = (s: BenchStats) => `${s.median.toFixed(1)} tok/s (min ${s.min.toFixed(1)}, max ${s.max.toFixed(1)})`;
  return [
    `model:   ${r.model} (${r.format}, ${r.architecture})`,
    `threads: ${r.threads}, isa: ${r.isa}, load: ${r.loadMs} ms`,
    `prefill: ${r.promptTokens} tokens: ${fmt(r.prefill)}`,
    `decode:  ${r.genTokens} tokens: ${fmt(r.decode)}`,
    `(median of ${r.repetitions} runs after one warm-up)`,
    '',
  ].join('\n');
}

export function registerBench(program: Command): void {
  const command = program
    .command('bench')
    .description('measure prefill and decode speed (tokens/s: median, min, max)')
    .argument('<model>', 'weight file or folder', existingPath)
    .option('--prompt-tokens <n>', 'prompt length', intOption(1), 512)
    .option('--gen-tokens <n>', 'tokens to generate', intOption(1), 128)
    .option('--repetitions <n>', 'timed runs', intOption(1), 3)
    .option('--json', 'print a JSON report');
  addModelOptions(command);
  command.action(
    action(async (modelPath: string, opts: Record<string, unknown>) => {
      const load = modelOptions(opts);
      const report = await benchModel(modelPath, {
        promptTokens: opts.promptTokens as number,
        genTokens: opts.genTokens as number,
        repetitions: opts.repetitions as number,
        threads: load.threads,
        contextLength: load.contextLength,
        quant: load.quant,
        tokenizer: typeof load.tokenizer === 'string' ? load.tokenizer : undefined,
      });
      process.stdout.write(opts.json ? `${JSON.stringify(report, null, 2)}\n` : renderBench(report));
    }),
  );
}
