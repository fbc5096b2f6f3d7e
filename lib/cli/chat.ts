/**
 * `weightmap chat MODEL [--system TEXT] [--think | --no-think] [options]`: an interactive chat on
 * stdin/stdout. One line is one user message; /exit (or end of input) quits; Ctrl-C stops a reply.
 * The model keeps its KV cache across turns, so each turn feeds only the new messages.
 */
import * as readline from 'node:readline';
import type { Command } from 'commander';
import type { ChatMessage } from '../chat';
import { AbortError } from '../errors';
import { loadModel } from '../model';
import { writeOut } from './generate';
import { addModelOptions, addSamplingOptions, modelOptions, samplingOptions } from './model-options';
import { action, existingPath, intOption } from './run-command';

export function registerChat(program: Command): void {
  const command = program
    .command('chat')
    .description('chat with a model on stdin/stdout (/exit to quit)')
    .argument('<model>', 'weight file or folder', existingPath)
    .option('--system <text>', 'a system message before the conversation')
    .option('--think', 'let the model think before answering (Qwen3)')
    .option('--no-think', 'answer without thinking (the default)')
    .option('--max-tokens <n>', 'most tokens per reply', intOption(0));
  addModelOptions(command);
  addSamplingOptions(command);
  command.action(
    action(async (modelPath: string, opts: Record<string, unknown>) => {
      const model = await loadModel(modelPath, modelOptions(opts));
      const tty = process.stdin.isTTY === true && process.stdout.isTTY === true;
      const rl = readline.createInterface({ input: process.stdin, output: tty ? process.stdout : undefined, terminal: tty, prompt: '> ' });
      let running: AbortController | undefined;
      rl.on('SIGINT', () => (running ? running.abort() : rl.close()));
      const onInt = () => running?.abort();
      process.on('SIGINT', onInt);
      const messages: ChatMessage[] = opts.system !== undefined ? [{ role: 'system', content: opts.system as string }] : [];
      // The seed, when given, makes the whole conversation reproducible: one seed per turn from it.
      const sampling = samplingOptions(opts);
      let turn = 0n;
      try {
        if (tty) rl.prompt();
        for await (const line of rl) {
          const input = line.trim();
          if (input === '/exit' || input === '/quit') break;
          if (input.length === 0) {
            if (tty) rl.prompt();
            continue;
          }
          messages.push({ role: 'user', content: input });
          running = new AbortController();
          const generation = model.chat(messages, {
            ...sampling,
            ...(sampling.seed !== undefined ? { seed: (BigInt(sampling.seed) + turn++) % (1n << 64n) } : {}),
            enableThinking: opts.think === true,
            ...(opts.maxTokens !== undefined ? { maxTokens: opts.maxTokens as number } : {}),
            signal: running.signal,
          });
          let reply = '';
          try {
            for await (const piece of generation) {
              reply += piece.text;
              await writeOut(piece.text);
            }
          } catch (error) {
            if (!(error instanceof AbortError)) throw error;
          } finally {
            running = undefined;
          }
          await writeOut('\n');
          messages.push({ role: 'assistant', content: reply });
          if (tty) rl.prompt();
        }
      } finally {
        process.removeListener('SIGINT', onInt);
        rl.close();
        model.dispose();
      }
    }),
  );
}
