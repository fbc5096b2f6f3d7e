/** Options shared by the commands that load a model and sample from it (generate, chat, bench). */
import type { Command } from 'commander';
import type { LoadModelOptions } from '../models/model';
import { SAMPLING_DEFAULTS, type SamplingOptions } from '../generation/sampling';
import { InvalidArgumentError } from 'commander';
import { existingPath, intOption, numberOption, threadsOption } from './run-command';

export function addModelOptions(command: Command): Command {
  return command
    .option('--tokenizer <path>', 'tokenizer file or folder (default: beside or inside the weights)', existingPath)
    .option('--threads <n>', 'engine threads, 1 to the logical cores (default: physical cores)', threadsOption)
    .option('--context <n>', "context length in tokens, or 'max' for the model's maximum (default: min(model maximum, 4096))", contextOption)
    .option('--quant <type>', "decoder weights: none (as stored), q8_0 (quantize at load) or f32 (dequantize)")
    .option('--pipeline <stages>', 'run a sepweight tree on stages: 0-13=host:port,14-27=host:port (replicas: 0-13=a|b)');
}

export function modelOptions(opts: Record<string, unknown>): LoadModelOptions {
  const out: LoadModelOptions = {};
  if (opts.tokenizer !== undefined) out.tokenizer = opts.tokenizer as string;
  if (opts.threads !== undefined) out.threads = opts.threads as number;
  if (opts.context !== undefined) out.contextLength = opts.context as number | 'max';
  if (opts.quant !== undefined) out.quant = opts.quant as LoadModelOptions['quant'];
  if (opts.pipeline !== undefined) out.pipeline = parsePipelineFlag(opts.pipeline as string);
  return out;
}

/** "0-13=127.0.0.1:50051,14-27=127.0.0.1:50052|127.0.0.1:50053" → the stages (replicas split by '|'). */
export function parsePipelineFlag(value: string): { layers: string; address: string[] }[] {
  return value.split(',').map((part) => {
    const at = part.indexOf('=');
    if (at <= 0 || at === part.length - 1) throw new InvalidArgumentError(`--pipeline: '${part}' is not layers=host:port`);
    return { layers: part.slice(0, at), address: part.slice(at + 1).split('|') };
  });
}

function contextOption(value: string): number | 'max' {
  return value === 'max' ? 'max' : intOption(1)(value);
}

function seedOption(value: string): bigint {
  if (!/^\d+$/.test(value) || BigInt(value) >= 1n << 64n) throw new InvalidArgumentError('expected an integer in [0, 2^64 - 1]');
  return BigInt(value);
}

export function addSamplingOptions(command: Command): Command {
  const d = SAMPLING_DEFAULTS;
  return command
    .option('--temperature <t>', `0 = greedy (default ${d.temperature})`, numberOption(0))
    .option('--top-k <k>', `keep the k most likely tokens (default ${d.topK}, 0 = off)`, intOption(0))
    .option('--top-p <p>', `nucleus sampling (default ${d.topP}, 1 = off)`, numberOption(0, 1))
    .option('--min-p <p>', `keep tokens with prob >= p x the top prob (default ${d.minP}, 0 = off)`, numberOption(0, 1))
    .option('--repeat-penalty <r>', `penalize repeated tokens (default ${d.repeatPenalty}, 1 = off)`, numberOption(0, Infinity, true))
    .option('--frequency-penalty <f>', `subtract f per occurrence (default ${d.frequencyPenalty})`, numberOption())
    .option('--presence-penalty <p>', `subtract p once per present token (default ${d.presencePenalty})`, numberOption())
    .option('--penalty-last-n <n>', `tokens the penalties look at (default ${d.penaltyLastN}, -1 = all)`, intOption(-1))
    .option('--seed <s>', 'random seed (default: random)', seedOption);
}

export function samplingOptions(opts: Record<string, unknown>): SamplingOptions {
  // Each flag's attribute is its option's name (--top-k: topK).
  const out: Record<string, unknown> = {};
  for (const key of [...Object.keys(SAMPLING_DEFAULTS), 'seed']) if (opts[key] !== undefined) out[key] = opts[key];
  return out as SamplingOptions;
}
