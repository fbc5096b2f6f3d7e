/**
 * Stage processes for the pipeline tests: lib/ transpiled once to plain JS under build/ (type
 * stripping only, so a spawned Node starts in well under a second instead of loading TypeScript),
 * then `weightmap stage` spawned from it. Every process a file starts is SIGKILLed in its afterAll.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';
import { loadModel, type Model } from '../../lib/models/model';

const ROOT = path.resolve(__dirname, '..', '..');

/** Transpiles lib/ into a fresh folder under build/ (inside the package, so packageRoot still finds package.json). */
export function compileLib(): { main: string; cleanup(): void } {
  fs.mkdirSync(path.join(ROOT, 'build'), { recursive: true });
  const out = fs.mkdtempSync(path.join(ROOT, 'build', 'pipeline-test-'));
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const from = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(from);
      else if (entry.name.endsWith('.ts')) {
        const to = path.join(out, path.relative(ROOT, from)).replace(/\.ts$/, '.js');
        const js = ts.transpileModule(fs.readFileSync(from, 'utf8'), {
          compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
        }).outputText;
        fs.mkdirSync(path.dirname(to), { recursive: true });
        fs.writeFileSync(to, js);
      }
    }
  };
  walk(path.join(ROOT, 'lib'));
  return { main: path.join(out, 'lib', 'cli', 'main.js'), cleanup: () => fs.rmSync(out, { recursive: true, force: true }) };
}

export interface StageProcess {
  child: ChildProcess;
  address: string;
  /** Resolves with the exit code (or signal) once the process has exited. */
  exited: Promise<number | NodeJS.Signals | null>;
  stderr(): string;
}

/** Spawns `weightmap stage DIR --layers L ...args` and waits for its JSON line (rejects with its stderr if it exits first). */
export function spawnStage(main: string, dir: string, layers: string, args: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<StageProcess> {
  const child = spawn(process.execPath, [main, 'stage', dir, '--layers', layers, '--threads', '1', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, WEIGHTMAP_ADDON: path.join(ROOT, 'build', 'Release', 'weightmap.node'), ...env },
  });
  let err = '';
  let out = '';
  child.stderr!.on('data', (d) => (err += d));
  const exited = new Promise<number | NodeJS.Signals | null>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal)));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl >= 0) {
        const { address } = JSON.parse(out.slice(0, nl)) as { address: string };
        resolve({ child, address, exited, stderr: () => err });
      }
    });
    void exited.then((code) => reject(new Error(`stage ${layers} exited (${code}) before serving: ${err}`)));
  });
}

/** SIGKILLs every process still running and waits for them to exit. */
export async function killAll(stages: (StageProcess | undefined)[]): Promise<void> {
  await Promise.all(
    stages.map(async (s) => {
      if (!s) return;
      if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
      await s.exited;
    }),
  );
}

/**
 * Loads `tree` whole and over two stages (`layers` of each, at their addresses) and checks the stages
 * give the single process's logits after `prompt` bit for bit and its 8 greedy tokens; the models are
 * pushed to `models` (the caller disposes them). Resolves to the single process's model.
 */
export async function expectStagesEqualOneProcess(tree: string, prompt: number[], stages: [string, StageProcess][], models: Model[]): Promise<Model> {
  const ref = await loadModel(tree, { threads: 1, contextLength: 64 });
  models.push(ref);
  const model = await loadModel(tree, {
    threads: 1,
    contextLength: 64,
    tokenizer: ref.tokenizer,
    pipeline: stages.map(([layers, stage]) => ({ layers, address: stage.address })),
  });
  models.push(model);
  expect(await model.logits(prompt)).toEqual(await ref.logits(prompt));
  const greedy = async (m: Model) => {
    const gen = m.generate(prompt, { maxTokens: 8, temperature: 0 });
    await gen.text();
    return [...gen.tokens];
  };
  const want = await greedy(ref);
  expect(want).toHaveLength(8);
  expect(await greedy(model)).toEqual(want);
  return ref;
}
