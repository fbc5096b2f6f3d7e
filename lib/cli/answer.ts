/**
 * `weightmap answer MODEL IMAGE QUESTION [options]`: a vision model's answer about an image,
 * streamed to stdout: Moondream's (MOON weights), or with `--mmproj FILE` a language model's with
 * its llama.cpp mmproj, asked as one chat turn [image, question]. IMAGE is any file sharp decodes
 * (JPEG, PNG, WebP, ...). SIGINT (Ctrl-C) or SIGTERM stops generation: exit code 130 or 143.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { loadModel } from '../models/model';
import { loadMoondream } from '../models/moondream';
import type { VisionModel } from '../models/vision-model';
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
    .description('answer a question about an image with a vision model (Moondream, or a language model with --mmproj); only the answer goes to stdout')
    .argument('<model>', 'MOON weights (config.json and tokenizer.json beside them), or a language model with --mmproj', existingPath)
    .argument('<image>', 'image file (JPEG, PNG, WebP, GIF, TIFF, AVIF)', existingPath)
    .argument('<question>', 'the question')
    .option('--max-tokens <n>', 'most tokens to generate (default: until EOS or the context is full)', intOption(0))
    .option(
      '--prefix-attention <n>',
      "let the first n positions attend to each other ('image' = BOS + every patch, upstream Moondream's 730); default: causal",
      prefixOption,
    )
    .option('--mmproj <file>', "the language model's llama.cpp mmproj GGUF (vision encoder and projector)", existingPath)
    .option('--ids', 'print the generated token ids (one line) instead of the text');
  addModelOptions(command);
  addSamplingOptions(command);
  command.action(
    interruptible(async (signal, modelPath: string, image: string, question: string, opts: Record<string, unknown>) => {
      const sampling = { ...samplingOptions(opts), ...(opts.maxTokens !== undefined ? { maxTokens: opts.maxTokens as number } : {}), signal };
      if (opts.mmproj !== undefined) {
        if (opts.prefixAttention !== undefined) throw new InvalidArgumentError('--prefix-attention is Moondream\'s; an mmproj model attends over the image as its projector says');
        const model = (await loadModel(modelPath, { ...modelOptions(opts), mmproj: opts.mmproj as string })) as VisionModel;
        try {
          await printGeneration(model.chat([{ role: 'user', content: [{ type: 'image', image }, { type: 'text', text: question }] }], sampling), !!opts.ids);
        } finally {
          model.dispose();
        }
        return;
      }
      const model = await loadMoondream(modelPath, modelOptions(opts));
      try {
        const generation = model.answer(image, question, {
          ...sampling,
          ...(opts.prefixAttention !== undefined ? { prefixAttention: opts.prefixAttention as number | boolean } : {}),
        });
        await printGeneration(generation, !!opts.ids);
      } finally {
        model.dispose();
      }
    }),
  );
}
