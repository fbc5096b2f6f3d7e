/**
 * `weightmap bench MODEL [--prompt-tokens 512 --gen-tokens 128 --repetitions 3 --threads N --json]`:
 * prefill and decode speed in tokens per second (median, min and max over the repetitions, after
 * one untimed warm-up run that also pages the weights in), with the threads and kernel ISA used;
 * with --speculative / --draft-model the decode is speculative and its acceptance is reported.
 * Lengths left at their defaults shrink to fit a model with a shorter context (said on stderr).
 */
import type { Command } from 'commander';
import { loadModel, type Model } from '../models/model';
import { addModelOptions, modelOptions } from './model-options';
import { addSpeculativeOptions, speculativeOptions } from './speculative-options';
import type { SpeculativeOptions, SpeculativeStats } from '../generation/speculative';
import { existingPath, interruptible, intOption } from './run-command';
import { rangeError } from '../base/errors';

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
  /** With speculative decoding: the guesses of the timed runs (summed), kept / drafted, and tokens per forward pass. */
  speculative?: SpeculativeStats & { acceptance: number; tokensPerPass: number };
}

/** The prompt and generation lengths bench uses unless told. */
export const BENCH_DEFAULTS = { promptTokens: 512, genTokens: 128 } as const;

/**
 * The lengths to run within `context` positions: the ones given stay as they are (too long is an
 * error); defaulted ones shrink, sharing what is left in the defaults' proportion.
 */
export function fitBenchLengths(promptTokens: number | undefined, genTokens: number | undefined, context: number): { promptTokens: number; genTokens: number } {
  let prompt = promptTokens ?? BENCH_DEFAULTS.promptTokens;
  let gen = genTokens ?? BENCH_DEFAULTS.genTokens;
  if (prompt + gen > context) {
    if (promptTokens === undefined && genTokens === undefined) {
      gen = Math.max(1, Math.floor((context * BENCH_DEFAULTS.genTokens) / (BENCH_DEFAULTS.promptTokens + BENCH_DEFAULTS.genTokens)));
      prompt = context - gen;
    } else if (promptTokens === undefined) prompt = context - gen;
    else if (genTokens === undefined) gen = context - prompt;
  }
  if (prompt < 1 || gen < 1 || prompt + gen > context) {
    throw rangeError(`--prompt-tokens + --gen-tokens (${prompt + gen}) exceed the context length ${context}`);
  }
  return { promptTokens: prompt, genTokens: gen };
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
async function run(model: Model, ids: number[], gen: number, signal?: AbortSignal, speculative?: SpeculativeOptions): Promise<{ prefill: number; decode: number; stats?: SpeculativeStats }> {
  let t0 = process.hrtime.bigint();
  await model.logits(ids, { signal });
  const prefillS = Number(process.hrtime.bigint() - t0) / 1e9;
  // The session keeps the prompt: generation re-feeds only its last token, then one token per step.
  t0 = process.hrtime.bigint();
  const generation = model.generate(ids, { temperature: 0, maxTokens: gen, stopTokens: [], signal, ...(speculative ? { speculative } : {}) });
  let count = 0;
  for await (const _piece of generation) count++;
  const decodeS = Number(process.hrtime.bigint() - t0) / 1e9;
  return { prefill: ids.length / prefillS, decode: count / decodeS, ...(generation.speculative ? { stats: generation.speculative } : {}) };
}

export async function benchModel(
  path: string,
  options: {
    /** Default BENCH_DEFAULTS.promptTokens, shrunk to fit the context. */
    promptTokens?: number;
    /** Default BENCH_DEFAULTS.genTokens, shrunk to fit the context. */
    genTokens?: number;
    repetitions: number;
    threads?: number;
    contextLength?: number | 'max';
    quant?: string;
    tokenizer?: string;
    /** Told when defaulted lengths were shrunk to fit the model's context. */
    onNotice?: (message: string) => void;
    /** Decode with speculative decoding (GenerateOptions.speculative). */
    speculative?: SpeculativeOptions;
    signal?: AbortSignal;
  },
): Promise<BenchReport> {
  const { repetitions } = options;
  const lengthsGiven = options.promptTokens !== undefined && options.genTokens !== undefined;
  const model = await loadModel(path, {
    ...(options.tokenizer !== undefined ? { tokenizer: options.tokenizer } : {}),
    ...(options.threads !== undefined ? { threads: options.threads } : {}),
    ...(options.quant !== undefined ? { quant: options.quant as 'none' | 'q8_0' | 'f32' } : {}),
    // Lengths given ask for exactly their context; defaulted ones fit the model's default context.
    ...(options.contextLength !== undefined || lengthsGiven ? { contextLength: options.contextLength ?? options.promptTokens! + options.genTokens! } : {}),
  });
  try {
    const { promptTokens, genTokens } = fitBenchLengths(options.promptTokens, options.genTokens, model.contextLength);
    if (promptTokens !== (options.promptTokens ?? BENCH_DEFAULTS.promptTokens) || genTokens !== (options.genTokens ?? BENCH_DEFAULTS.genTokens)) {
      options.onNotice?.(`the context holds ${model.contextLength} positions: --prompt-tokens ${promptTokens} --gen-tokens ${genTokens} (defaults ${BENCH_DEFAULTS.promptTokens} and ${BENCH_DEFAULTS.genTokens} shrunk to fit)`);
    }
    const ids = promptIds(model, promptTokens);
    await run(model, ids, Math.min(genTokens, 8), options.signal, options.speculative); // warm-up: pages the weights in
    const prefill: number[] = [];
    const decode: number[] = [];
    let speculative: SpeculativeStats | undefined;
    for (let r = 0; r < repetitions; r++) {
      const result = await run(model, ids, genTokens, options.signal, options.speculative);
      prefill.push(result.prefill);
      decode.push(result.decode);
      if (result.stats) {
        const s = (speculative ??= { drafted: 0, accepted: 0, verifications: 0, passes: 0, emitted: 0 });
        for (const key of Object.keys(s) as (keyof SpeculativeStats)[]) s[key] += result.stats[key];
      }
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
      ...(speculative ? { speculative: { ...speculative, acceptance: speculative.drafted ? speculative.accepted / speculative.drafted : 0, tokensPerPass: speculative.emitted / speculative.passes } } : {}),
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
    ...(r.speculative ? [`speculative: ${r.speculative.accepted} of ${r.speculative.drafted} guesses kept (${(100 * r.speculative.acceptance).toFixed(1)}%), ${r.speculative.tokensPerPass.toFixed(2)} tokens per forward pass`] : []),
    `(median of ${r.repetitions} runs after one warm-up)`,
    '',
  ].join('\n');
}

export function registerBench(program: Command): void {
  const command = program
    .command('bench')
    .description('measure prefill and decode speed (tokens/s: median, min, max)')
    .argument('<model>', 'weight file or folder', existingPath)
    .option('--prompt-tokens <n>', `prompt length (default ${BENCH_DEFAULTS.promptTokens}, less to fit the context)`, intOption(1))
    .option('--gen-tokens <n>', `tokens to generate (default ${BENCH_DEFAULTS.genTokens}, less to fit the context)`, intOption(1))
    .option('--repetitions <n>', 'timed runs', intOption(1), 3)
    .option('--json', 'print a JSON report');
  addSpeculativeOptions(addModelOptions(command));
  command.action(
    interruptible(async (signal, modelPath: string, opts: Record<string, unknown>) => {
      const load = modelOptions(opts);
      const { speculative, draftModel } = await speculativeOptions(opts, load);
      const report = await benchModel(modelPath, {
        ...(speculative ? { speculative } : {}),
        promptTokens: opts.promptTokens as number | undefined,
        genTokens: opts.genTokens as number | undefined,
        repetitions: opts.repetitions as number,
        threads: load.threads,
        contextLength: load.contextLength,
        quant: load.quant,
        tokenizer: typeof load.tokenizer === 'string' ? load.tokenizer : undefined,
        onNotice: (message) => process.stderr.write(`weightmap bench: ${message}\n`),
        signal,
      }).finally(() => draftModel?.dispose());
      process.stdout.write(opts.json ? `${JSON.stringify(report, null, 2)}\n` : renderBench(report));
    }),
  );
}
