#!/usr/bin/env node
/** The `weightmap` command line: every command is a thin layer over the public API. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Command, CommanderError } from 'commander';
import { packageRoot } from '../addon/native';
import { registerAnswer } from './answer';
import { registerBench } from './bench';
import { registerChat } from './chat';
import { registerConvert } from './convert';
import { registerEmbed } from './embed';
import { registerGenerate } from './generate';
import { registerInspect } from './inspect';
import { registerRerank } from './rerank';
import { registerServe } from './serve';
import { registerStage } from './stage';
import { EXIT_USAGE } from './run-command';

export function buildProgram(): Command {
  const program = new Command();
  const { version } = JSON.parse(fs.readFileSync(path.join(packageRoot, 'package.json'), 'utf8')) as { version: string };
  program.name('weightmap').description('memory-mapped LLM weights and fast CPU inference').version(version);
  // Set before the commands are added, so that they inherit them: usage errors (a bad option or
  // argument value) are one line `weightmap: ...` and exit code 2, and never exit the process
  // from inside commander.
  program.exitOverride();
  program.configureOutput({ outputError: (text, write) => write(`weightmap: ${text.replace(/^error: /, '')}`) });
  registerInspect(program);
  registerConvert(program);
  registerEmbed(program);
  registerRerank(program);
  registerGenerate(program);
  registerChat(program);
  registerBench(program);
  registerAnswer(program);
  registerServe(program);
  registerStage(program);
  return program;
}

export async function main(argv: string[] = process.argv): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (error) {
    // Thrown by exitOverride() after commander printed its message (or the help or version).
    if (!(error instanceof CommanderError)) throw error;
    process.exitCode = error.exitCode === 0 ? 0 : EXIT_USAGE;
  }
}

if (require.main === module) {
  void main();
}
