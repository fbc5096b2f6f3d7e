/**
 * `weightmap answer MODEL IMAGE QUESTION [options]`: Moondream's answer about an image, streamed
 * to stdout. IMAGE is any file sharp decodes (JPEG, PNG, WebP, ...). SIGINT (Ctrl-C) or SIGTERM
 * stops generation: exit code 130 or 143.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { loadMoondream } from '../models/moondream';
import { printGeneration } from './generate';
import { addModelOptions, addSamplingOptions, modelOptions, samplingOptions } from './model-options';
import { existingPath, interruptible, intOption } from './run-command';

function prefixOption(value: string): number | boolean {
  if (value === 'image') return true;
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n < 0) throw new InvalidArgumentError("expected 'image' or an integer >= 0");
  return n;
}

export function registerAnswer(program: Command): void {
  const command = program
    .command('answer')
    .description('answer a question about an image with a Moondream model; only the answer goes to stdout')
    .argument('<model>', 'MOON weights (config.json and tokenizer.json beside them)', existingPath)
    .argument('<image>', 'image file (JPEG, PNG, WebP, GIF, TIFF, AVIF)', existingPath)
    .argument('<question>', 'the question')
    .option('--max-tokens <n>', 'most tokens to generate (default: until EOS or the context is full)', intOption(0))
    .option(
      '--prefix-attention <n>',
      "let the first n positions attend to each other ('image' = BOS + every patch, upstream Moondream's 730); default: causal",
      prefixOption,
    )
    .option('--ids', 'print the generated token ids (one line) instead of the text');
  addModelOptions(command);
  addSamplingOptions(command);
  command.action(
    interruptible(async (signal, modelPath: string, image: string, question: string, opts: Record<string, unknown>) => {
      const model = await loadMoondream(modelPath, modelOptions(opts));
      try {
        const generation = model.answer(image, question, {
          ...samplingOptions(opts),
          ...(opts.maxTokens !== undefined ? { maxTokens: opts.maxTokens as number } : {}),
          ...(opts.prefixAttention !== undefined ? { prefixAttention: opts.prefixAttention as number | boolean } : {}),
          signal,
        });
        await printGeneration(generation, !!opts.ids);
      } finally {
        model.dispose();
      }
    }),
  );
}
