#!/usr/bin/env node
/** The `weightmap` command line: every command is a thin layer over the public API. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Command } from 'commander';
import { packageRoot } from '../native';
import { registerAnswer } from './answer';
import { registerBench } from './bench';
import { registerChat } from './chat';
import { registerConvert } from './convert';
import { registerEmbed } from './embed';
import { registerGenerate } from './generate';
import { registerInspect } from './inspect';
import { registerServe } from './serve';
import { registerStage } from './stage';

export function buildProgram(): Command {
  const program = new Command();
  const { version } = JSON.parse(fs.readFileSync(path.join(packageRoot, 'package.json'), 'utf8')) as { version: string };
  program.name('weightmap').description('memory-mapped LLM weights and fast CPU inference').version(version);
  registerInspect(program);
  registerConvert(program);
  registerEmbed(program);
  registerGenerate(program);
  registerChat(program);
  registerBench(program);
  registerAnswer(program);
  registerServe(program);
  registerStage(program);
  return program;
}

export async function main(argv: string[] = process.argv): Promise<void> {
  await buildProgram().parseAsync(argv);
}

if (require.main === module) {
  void main();
}
