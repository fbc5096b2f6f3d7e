/**
 * `weightmap chat MODEL [--system TEXT] [--think | --no-think] [options]`: an interactive chat on
 * stdin/stdout. One line is one user message; a line starting with `/` is a chat command (/help
 * lists them), never sent to the model. Ctrl-C at a terminal stops a reply; at the prompt, and
 * SIGINT or SIGTERM from elsewhere, it ends the chat (exit code 130 or 143). The model keeps its KV
 * cache across turns, so each turn feeds only the new messages.
 */
import * as readline from 'node:readline';
import type { Command } from 'commander';
import type { ChatMessage } from '../generation/chat';
import { AbortError } from '../base/errors';
import { HarmonyStreamer, isHarmonyTemplate, type HarmonyPiece } from '../generation/harmony';
import { loadModel } from '../models/model';
import { writeOut } from './generate';
import { addModelOptions, addSamplingOptions, modelOptions, samplingOptions } from './model-options';
import { addSpeculativeOptions, speculativeOptions } from './speculative-options';
import { existingPath, interruptible, intOption, whenInterrupted } from './run-command';

/** The chat commands, as /help lists them. */
const CHAT_COMMANDS: readonly [string, string][] = [
  ['/help', 'list these commands'],
  ['/exit, /quit', 'end the chat (so does the end of input)'],
  ['//text', 'send "/text" to the model'],
];

export const CHAT_HELP = `${CHAT_COMMANDS.map(([name, what]) => `  ${name.padEnd(14)}${what}`).join('\n')}\n`;

/** What a line of input is: a message for the model, a chat command, or nothing. */
export type ChatInput = { kind: 'message'; text: string } | { kind: 'exit' } | { kind: 'help' } | { kind: 'unknown'; command: string } | { kind: 'empty' };

export function parseChatInput(line: string): ChatInput {
  const input = line.trim();
  if (input.length === 0) return { kind: 'empty' };
  if (input.startsWith('//')) return { kind: 'message', text: input.slice(1) };
  if (!input.startsWith('/')) return { kind: 'message', text: input };
  const command = input.split(/\s/, 1)[0];
  if (command === '/exit' || command === '/quit') return { kind: 'exit' };
  if (command === '/help') return { kind: 'help' };
  return { kind: 'unknown', command };
}

export function registerChat(program: Command): void {
  const command = program
    .command('chat')
    .description('chat with a model on stdin/stdout (/help lists the chat commands, /exit quits)')
    .argument('<model>', 'weight file or folder', existingPath)
    .option('--system <text>', 'a system message before the conversation')
    .option('--think', 'let the model think before answering (Qwen3)')
    .option('--no-think', 'answer without thinking (the default)')
    .option('--max-tokens <n>', 'most tokens per reply', intOption(0));
  addSpeculativeOptions(addSamplingOptions(addModelOptions(command)));
  command.action(
    interruptible(async (signal, modelPath: string, opts: Record<string, unknown>) => {
      const load = modelOptions(opts);
      const model = await loadModel(modelPath, load);
      const { speculative, draftModel } = await speculativeOptions(opts, load).catch((error) => {
        model.dispose();
        throw error;
      });
      const tty = process.stdin.isTTY === true && process.stdout.isTTY === true;
      const harmony = 'chatTemplate' in model && isHarmonyTemplate(model.chatTemplate?.source);
      const rl = readline.createInterface({ input: process.stdin, output: tty ? process.stdout : undefined, terminal: tty, prompt: '> ' });
      let running: AbortController | undefined;
      // A terminal's Ctrl-C reaches readline, not the process: it stops the reply, or at the prompt is the SIGINT it would have been.
      rl.on('SIGINT', () => (running ? running.abort() : process.kill(process.pid, 'SIGINT')));
      const removeListener = whenInterrupted(signal, () => {
        running?.abort();
        rl.close();
        process.stdin.destroy();
      });
      const messages: ChatMessage[] = opts.system !== undefined ? [{ role: 'system', content: opts.system as string }] : [];
      // The seed, when given, makes the whole conversation reproducible: one seed per turn from it.
      const sampling = samplingOptions(opts);
      let turn = 0n;
      try {
        if (tty) rl.prompt();
        for await (const line of rl) {
          const input = parseChatInput(line);
          if (input.kind === 'exit') break;
          if (input.kind !== 'message') {
            if (input.kind === 'help') await writeOut(CHAT_HELP);
            if (input.kind === 'unknown') process.stderr.write(`weightmap: unknown chat command ${input.command} (/help lists them; //text sends /text)\n`);
            if (tty) rl.prompt();
            continue;
          }
          messages.push({ role: 'user', content: input.text });
          running = new AbortController();
          const generation = model.chat(messages, {
            ...sampling,
            ...(sampling.seed !== undefined ? { seed: (BigInt(sampling.seed) + turn++) % (1n << 64n) } : {}),
            enableThinking: opts.think === true,
            ...(speculative ? { speculative } : {}),
            ...(opts.maxTokens !== undefined ? { maxTokens: opts.maxTokens as number } : {}),
            signal: running.signal,
          });
          let reply = '';
          let reasoning = '';
          // A Harmony reply (gpt-oss) shows its final channel; the analysis is kept as the turn's reasoning.
          const channels = harmony ? new HarmonyStreamer(() => '') : undefined;
          const show = async ({ reasoning: r, content }: HarmonyPiece) => {
            reasoning += r;
            reply += content;
            await writeOut(content);
          };
          try {
            for await (const piece of generation) await show(channels ? channels.push(piece.text) : { reasoning: '', content: piece.text });
          } catch (error) {
            if (!(error instanceof AbortError)) throw error;
          } finally {
            running = undefined;
          }
          if (channels) await show(channels.finish(generation.stopReason === 'stop-token' || generation.stopReason === 'stop-string'));
          await writeOut('\n');
          messages.push({ role: 'assistant', content: reply, ...(reasoning ? { reasoningContent: reasoning } : {}) });
          if (signal.aborted) break;
          if (tty) rl.prompt();
        }
      } finally {
        removeListener();
        rl.close();
        model.dispose();
        draftModel?.dispose();
      }
    }),
  );
}
