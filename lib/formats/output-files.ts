/**
 * Every file a writer produces goes through one OutputFiles: it is written to a temporary file (or
 * folder) beside its destination, fsynced, and renamed into place only when the whole write has
 * succeeded. A failure or an abort removes the temporaries and leaves every destination as it was.
 * Before anything is staged, the destination is checked against the files the weights were read
 * from (real path and device/inode): a write never replaces its own input.
 */
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as nodePath from 'node:path';
import { randomBytes } from 'node:crypto';
import { AbortError, OutputIsInputError, rangeError } from '../errors';
import type { ModelWeights } from '../weights';
import type { WriteOptions } from './types';

/** Files a reader may take from beside a weight file (config, tokenizer, chat template). */
const SIDECAR_NAMES = new Set([
  'config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json',
  'added_tokens.json', 'vocab.json', 'vocab.txt', 'merges.txt', 'tokenizer.bin', 'chat_template.jinja', 'chat_template.json',
  'modules.json', 'sentence_bert_config.json',
]);

/** Most entries listed under a folder input (a model folder holds tens; this bounds a hostile tree). */
const MAX_LISTED = 100_000;

interface Identity {
  path: string;
  real: string;
  dev: number;
  ino: number;
}

function identity(path: string): Identity | undefined {
  try {
    const stat = fs.statSync(path);
    if (!stat.isFile()) return undefined;
    return { path, real: fs.realpathSync(path), dev: stat.dev, ino: stat.ino };
  } catch {
    return undefined;
  }
}

function listFiles(dir: string, out: string[], recursive: boolean): void {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    if (out.length >= MAX_LISTED) return;
    const p = nodePath.join(dir, e.name);
    if (!e.isDirectory()) out.push(p);
    else if (recursive) listFiles(p, out, recursive);
  }
}

/**
 * The files behind `weights`: every mapped source; every file under a folder input; the files of
 * the folder of a safetensors file; for any other file input, itself, its `<name>.*` sidecars and
 * the config and tokenizer files beside it.
 */
export function inputFilesOf(weights: ModelWeights): string[] {
  const files = weights.sources.map((s) => s.path);
  const stat = fs.statSync(weights.path, { throwIfNoEntry: false });
  if (!stat) return files;
  if (stat.isDirectory()) {
    listFiles(weights.path, files, true);
    return files;
  }
  if (weights.format === 'safetensors') {
    listFiles(nodePath.dirname(weights.path), files, false);
    return files;
  }
  files.push(weights.path);
  const dir = nodePath.dirname(weights.path);
  const base = nodePath.basename(weights.path);
  let names: string[] = [];
  try {
    names = fs.readdirSync(dir);
  } catch {
    // an unreadable folder has no sidecars to protect
  }
  for (const name of names) {
    if (name.startsWith(`${base}.`) || SIDECAR_NAMES.has(name) || /^tok\d+\.bin$/.test(name)) files.push(nodePath.join(dir, name));
  }
  return files;
}

/** `path` with its folder's symlinks resolved (the file itself may not exist yet). */
function realDestination(path: string): string {
  const abs = nodePath.resolve(path);
  try {
    return nodePath.join(fs.realpathSync(nodePath.dirname(abs)), nodePath.basename(abs));
  } catch {
    return abs;
  }
}

interface Staged {
  temp: string;
  final: string;
}

export class OutputFiles {
  private readonly staged: Staged[] = [];
  /** Folders created for destinations that did not exist, removed again on discard when still empty. */
  private readonly createdDirs: string[] = [];
  private readonly inputs: Identity[];

  constructor(inputs: readonly string[], private readonly signal?: AbortSignal) {
    const seen = new Set<string>();
    this.inputs = [];
    for (const p of inputs) {
      const id = identity(p);
      if (id && !seen.has(`${id.dev}:${id.ino}`)) {
        seen.add(`${id.dev}:${id.ino}`);
        this.inputs.push(id);
      }
    }
  }

  /** Throws OutputIsInputError when writing `final` would replace (or, for a folder, hold) an input. */
  private checkFile(final: string): void {
    const real = realDestination(final);
    const existing = identity(final);
    for (const input of this.inputs) {
      if (input.real === real || (existing && existing.dev === input.dev && existing.ino === input.ino)) {
        throw new OutputIsInputError(final, input.path);
      }
    }
  }

  private checkFolder(final: string): void {
    const real = fs.existsSync(final) ? fs.realpathSync(final) : realDestination(final);
    for (const input of this.inputs) {
      if (input.real === real || input.real.startsWith(real + nodePath.sep)) throw new OutputIsInputError(final, input.path);
    }
  }

  private tempBeside(final: string): string {
    const abs = nodePath.resolve(final);
    const dir = nodePath.dirname(abs);
    const made = fs.mkdirSync(dir, { recursive: true });
    if (made !== undefined) this.createdDirs.push(made);
    return nodePath.join(dir, `.${nodePath.basename(abs)}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`);
  }

  /** The temporary path to write `final` to; commit() renames it into place. */
  file(final: string): string {
    if (this.staged.some((s) => nodePath.resolve(s.final) === nodePath.resolve(final))) throw new Error(`internal: ${final} is staged twice`);
    this.checkFile(final);
    const temp = this.tempBeside(final);
    this.staged.push({ temp, final });
    return temp;
  }

  /**
   * A new temporary folder to build the folder `final` in; commit() renames it into place (`final`
   * must not exist or be empty: a folder output never merges into existing files).
   */
  folder(final: string): string {
    this.checkFolder(final);
    if (fs.existsSync(final) && (!fs.statSync(final).isDirectory() || fs.readdirSync(final).length > 0)) {
      throw rangeError(`the output folder ${final} must be new or empty`);
    }
    const temp = this.tempBeside(final);
    fs.mkdirSync(temp);
    this.staged.push({ temp, final });
    return temp;
  }

  /** Stages a small file written in one piece. */
  async writeFile(final: string, data: string | Uint8Array): Promise<void> {
    await writeSynced(this.file(final), data);
  }

  /** Renames every staged file into place, then syncs the folders that changed. */
  async commit(): Promise<void> {
    if (this.signal?.aborted) throw new AbortError('The write was aborted', { cause: this.signal.reason });
    const dirs = new Set<string>();
    for (const s of this.staged) {
      // A finished folder's files were synced as they were written; sync the folder entries too.
      if (fs.statSync(s.temp).isDirectory()) await syncTree(s.temp);
      await fsp.rename(s.temp, s.final);
      dirs.add(nodePath.dirname(nodePath.resolve(s.final)));
    }
    this.staged.length = 0;
    for (const dir of dirs) await syncDir(dir);
  }

  /** Removes every temporary (and the destination folders this write created). */
  async discard(): Promise<void> {
    for (const s of this.staged) await fsp.rm(s.temp, { recursive: true, force: true });
    this.staged.length = 0;
    for (const dir of this.createdDirs.reverse()) await removeEmptyTree(dir);
  }
}

/** Writes a whole file and fsyncs it before closing. */
export async function writeSynced(path: string, data: string | Uint8Array): Promise<void> {
  const handle = await fsp.open(path, 'w');
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function syncDir(dir: string): Promise<void> {
  // Folders cannot be opened for fsync everywhere (Windows): the rename is durable enough there.
  const handle = await fsp.open(dir, 'r').catch(() => undefined);
  if (!handle) return;
  try {
    await handle.sync().catch(() => undefined);
  } finally {
    await handle.close();
  }
}

async function syncTree(dir: string): Promise<void> {
  for (const e of await fsp.readdir(dir, { withFileTypes: true })) if (e.isDirectory()) await syncTree(nodePath.join(dir, e.name));
  await syncDir(dir);
}

async function removeEmptyTree(dir: string): Promise<void> {
  const entries = await fsp.readdir(dir, { withFileTypes: true }).catch(() => undefined);
  if (!entries) return;
  for (const e of entries) if (e.isDirectory()) await removeEmptyTree(nodePath.join(dir, e.name));
  if ((await fsp.readdir(dir)).length === 0) await fsp.rmdir(dir).catch(() => undefined);
}

/**
 * Runs a writer's `body` with an OutputFiles guarding the files of `weights`, then commits; on any
 * failure (abort included) every temporary is removed and the error rethrown.
 */
export async function writeOutputs(weights: ModelWeights, options: WriteOptions, body: (out: OutputFiles) => Promise<void>): Promise<void> {
  if (options.signal?.aborted) throw new AbortError('The write was aborted', { cause: options.signal.reason });
  const out = new OutputFiles(inputFilesOf(weights), options.signal);
  try {
    await body(out);
    await out.commit();
  } catch (error) {
    await out.discard();
    throw error;
  }
}
