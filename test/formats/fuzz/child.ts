/**
 * The fuzz child: runs a batch of cases (a JSON file of FuzzCase, from index argv[3]) one after
 * another and reports each on stdout as `start <i>` then `result <json>`. The parent limits its
 * heap and time: a case that aborts, dies or hangs is the one started and never finished.
 * Run as: node --max-old-space-size=N -r ./register-ts.js child.ts <cases.json> <first> <workdir>
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { UnsupportedError, WeightFormatError } from '../../../lib/base/errors';
import { detectFormat, readWeights } from '../../../lib/formats';
import { loadModel } from '../../../lib/models/model';
import { loadTokenizer } from '../../../lib/tokenizer-loading';
import { closeWeights, type FormatName, type ModelWeights } from '../../../lib/addon/weights';
import { CaseFolder, type FuzzCase } from './edits';

export interface CaseResult {
  index: number;
  /** typed: WeightFormatError/UnsupportedError; accepted: read and every view inside its file; anything else fails. */
  outcome: 'typed' | 'accepted' | 'untyped' | 'invalid';
  code?: string;
  message?: string;
}

/** A read must only describe bytes that exist. */
function viewsProblem(weights: ModelWeights): string | undefined {
  for (const t of weights.tensors) {
    const limit = t.source.byteLength;
    if (!(t.byteOffset >= 0 && t.byteOffset + t.byteLength <= limit)) return `tensor ${t.name} [${t.byteOffset}, +${t.byteLength}) outside ${limit} bytes`;
    if (t.scales && !(t.scales.byteOffset >= 0 && t.scales.byteOffset + t.scales.byteLength <= limit)) return `scales of ${t.name} outside the file`;
  }
  return undefined;
}

async function run(c: FuzzCase, target: string): Promise<string | undefined> {
  switch (c.operation) {
    case 'read': {
      const weights = await readWeights(target, { ...c.options, format: c.options?.format as FormatName });
      const problem = viewsProblem(weights);
      closeWeights(weights);
      detectFormat(target);
      return problem;
    }
    case 'tokenizer': {
      const tokenizer = await loadTokenizer(target);
      // Use it once: a table built from a bad id shows here.
      tokenizer.decode(tokenizer.encode('Hello world, fuzz.'));
      return undefined;
    }
    case 'model': {
      const model = await loadModel(target, { threads: 1 });
      model.dispose();
      return undefined;
    }
    case 'abort':
      return process.abort();
    case 'spin':
      for (;;);
  }
}

async function main(): Promise<void> {
  const [casesFile, firstArg, workdir] = process.argv.slice(2);
  const cases = JSON.parse(fs.readFileSync(casesFile, 'utf8')) as FuzzCase[];
  const folder = new CaseFolder(path.join(workdir, 'case'));
  const out = (line: string) => fs.writeSync(1, `${line}\n`);
  for (let i = Number(firstArg); i < cases.length; i++) {
    const c = cases[i];
    const target = folder.prepare(c);
    out(`start ${i}`);
    let result: CaseResult;
    try {
      const problem = await run(c, target);
      result = problem ? { index: i, outcome: 'invalid', message: problem } : { index: i, outcome: 'accepted' };
    } catch (error) {
      if (error instanceof WeightFormatError || error instanceof UnsupportedError) result = { index: i, outcome: 'typed', code: error.code, message: error.message };
      else result = { index: i, outcome: 'untyped', message: (error as Error)?.stack ?? String(error) };
    }
    out(`result ${JSON.stringify(result)}`);
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`fuzz child failed outside a case: ${(error as Error)?.stack ?? error}\n`);
    process.exit(70);
  },
);
