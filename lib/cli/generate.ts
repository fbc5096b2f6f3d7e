/**
 * `weightmap generate MODEL PROMPT [options]`: streams only the generated text to stdout (PROMPT
 * '-' reads it from stdin). SIGINT (Ctrl-C) or SIGTERM stops generation: exit code 130 or 143.
 */
import type { Command } from 'commander';
import { AbortError } from '../base/errors';
import type { Generation } from '../generation/generate';
import { loadModel, type Model } from '../models/model';
import { addModelOptions, addSamplingOptions, modelOptions, samplingOptions } from './model-options';
import { addSpeculativeOptions, speculativeOptions } from './speculative-options';
import { existingPath, interruptible, intOption, whenInterrupted } from './run-command';

/** Writes to stdout, waiting when the pipe is full. */
export async function writeOut(text: string): Promise<void> {
  if (text.length === 0) return;
  if (!process.stdout.write(text)) await new Promise<void>((resolve) => process.stdout.once('drain', resolve));
}

/** All of stdin as UTF-8; an AbortError when `signal` fires first. */
export async function readStdin(signal: AbortSignal): Promise<string> {
  const chunks: Buffer[] = [];
  const removeListener = whenInterrupted(signal, () => process.stdin.destroy());
  try {
    for await (const chunk of process.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  } catch (error) {
    if (!signal.aborted) throw error;
  } finally {
    removeListener();
  }
  if (signal.aborted) throw new AbortError('reading the prompt was interrupted', { cause: signal.reason });
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Streams a generation to stdout: its text as it comes, or with `ids` its token ids once it ends.
 * An interrupt (AbortError) ends it early, with what was generated so far printed.
 */
export async function printGeneration(generation: Generation, ids: boolean): Promise<void> {
  try {
    for await (const piece of generation) if (!ids) await writeOut(piece.text);
  } catch (error) {
    if (!(error instanceof AbortError)) throw error;
  }
  if (ids) await writeOut(`${generation.tokens.join(' ')}\n`);
  else if (process.stdout.isTTY) await writeOut('\n');
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

export function registerGenerate(program: Command): void {
  const command = program
    .command('generate')
    .description('generate text after a prompt; only the generated text goes to stdout')
    .argument('<model>', 'weight file or folder', existingPath)
    .argument('<prompt>', "the prompt text ('' for none, '-' to read stdin)")
    .option('--max-tokens <n>', 'most tokens to generate (default: until a stop token or the context is full)', intOption(0))
    .option('--stop <text>', 'stop before this text (repeatable)', collect)
    .option('--ids', 'print the generated token ids (one line) instead of the text');
  addModelOptions(command);
  addSamplingOptions(command);
  addSpeculativeOptions(command);
  command.action(
    interruptible(async (signal, modelPath: string, prompt: string, opts: Record<string, unknown>) => {
      // The models first: a bad one is reported before the prompt is waited for.
      const load = modelOptions(opts);
      const model = await loadModel(modelPath, load);
      let draftModel: Model | undefined;
      try {
        const drafting = await speculativeOptions(opts, load);
        draftModel = drafting.draftModel;
        const text = prompt === '-' ? await readStdin(signal) : prompt;
        const generation = model.generate(text, {
          ...samplingOptions(opts),
          ...(opts.maxTokens !== undefined ? { maxTokens: opts.maxTokens as number } : {}),
          ...(opts.stop !== undefined ? { stop: opts.stop as string[] } : {}),
          ...(drafting.speculative ? { speculative: drafting.speculative } : {}),
          signal,
        });
        await printGeneration(generation, !!opts.ids);
      } finally {
        model.dispose();
        draftModel?.dispose();
      }
    }),
  );
}
