/**
 * Every file a writer produces goes through one OutputFiles: it is written to a temporary file (or
 * folder) beside its destination, fsynced, and renamed into place only when the whole write has
 * succeeded. A failure or an abort removes the temporaries and leaves every destination as it was.
 * Before anything is staged, the destination is checked against the files the weights were read
 * from (real path and device/inode): a write never replaces its own input; and a sidecar (a
 * config.json, a tokenizer file) never replaces one of another model in the same folder.
 *
 * Temporaries are named `.<name>.<pid>-<hex>.tmp`: the live ones of this process are listed for
 * removeTemporariesSync() (a CLI killed by a second signal), and those of processes that no longer
 * run are removed from a folder the next time a write stages a file in it.
 */
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as nodePath from 'node:path';
import { randomBytes } from 'node:crypto';
import { AbortError, OutputIsInputError, rangeError, SidecarConflictError } from '../../base/errors';
import { detectedFormat, probe } from '../containers/detectors';
import type { ModelWeights } from '../../addon/weights';
import type { WriteOptions } from '../types';

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

/** The temporaries of this process not yet renamed or removed (for removeTemporariesSync). */
const liveTemporaries = new Set<string>();

/** `.<name>.<pid>-<8 hex>.tmp`: the name of a temporary, with the pid of the process writing it. */
const TEMPORARY_NAME = /^\..+\.(\d+)-[0-9a-f]{8}\.tmp$/;

/**
 * How long a temporary must have gone unmodified before a sweep may remove it: a pid that does not
 * run here may run elsewhere (another PID namespace or host sharing the folder), and a writer
 * that runs touches its temporary far more often than this.
 */
const STALE_AFTER_MS = 60_000;

/** Entries of one folder looked at for stale temporaries or other models' weight files. */
const MAX_SCANNED = 10_000;

/** Most bytes in a file name (ext4, xfs, btrfs, tmpfs, APFS, NTFS in UTF-16 units). */
const MAX_NAME_BYTES = 255;

/** A fresh temporary name for `base`, whose head is shortened so that a long (valid) name still fits. */
function temporaryName(base: string): string {
  const suffix = `.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
  const chars = Array.from(base);
  while (chars.length > 1 && Buffer.byteLength(`.${chars.join('')}${suffix}`) > MAX_NAME_BYTES) chars.pop();
  return `.${chars.join('')}${suffix}`;
}

function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the temporaries in `dir` left by processes that no longer run (killed mid-write) and
 * unmodified for STALE_AFTER_MS. Those of this process (another write in progress, maybe in
 * another thread) and of running ones stay.
 */
export function sweepStaleTemporaries(dir: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names.slice(0, MAX_SCANNED)) {
    const pid = TEMPORARY_NAME.exec(name)?.[1];
    if (pid === undefined || Number(pid) === process.pid || !Number.isSafeInteger(Number(pid)) || processRuns(Number(pid))) continue;
    const path = nodePath.join(dir, name);
    const modified = fs.lstatSync(path, { throwIfNoEntry: false })?.mtimeMs;
    if (modified === undefined || Date.now() - modified < STALE_AFTER_MS) continue;
    fs.rmSync(path, { recursive: true, force: true });
  }
}

/** Removes every temporary of this process now (before a forced exit). */
export function removeTemporariesSync(): void {
  for (const temp of liveTemporaries) fs.rmSync(temp, { recursive: true, force: true });
  liveTemporaries.clear();
}

/** Whether `path` holds bytes equal to `data`. */
function holds(path: string, data: string | Uint8Array): boolean {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  try {
    if (fs.statSync(path).size !== bytes.length) return false;
    return fs.readFileSync(path).equals(bytes);
  } catch {
    return false;
  }
}

/** A weight file in `dir` other than `except` (by name), if any: the model its sidecars belong to. */
function otherWeightFile(dir: string, except: string): string | undefined {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return undefined;
  }
  for (const e of entries.slice(0, MAX_SCANNED)) {
    if (!e.isFile() || e.name === except || e.name.startsWith('.') || SIDECAR_NAMES.has(e.name)) continue;
    const file = nodePath.join(dir, e.name);
    try {
      if (detectedFormat(probe(file)) !== undefined) return file;
    } catch {
      // unreadable: not a model this write could break
    }
  }
  return undefined;
}

export class OutputFiles {
  private readonly staged: Staged[] = [];
  /** Folders created for destinations that did not exist, removed again on discard when still empty. */
  private readonly createdDirs: string[] = [];
  private readonly inputs: Identity[];

  /** Folders swept of stale temporaries by this write. */
  private readonly swept = new Set<string>();

  constructor(
    inputs: readonly string[],
    private readonly signal?: AbortSignal,
    /** Replace sidecars of other models (WriteOptions.force). */
    private readonly force = false,
  ) {
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
    if (!this.swept.has(dir)) {
      this.swept.add(dir);
      sweepStaleTemporaries(dir);
    }
    const temp = nodePath.join(dir, temporaryName(nodePath.basename(abs)));
    liveTemporaries.add(temp);
    return temp;
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

  /**
   * Stages `final`, a file that goes with the weight file `owner` in its folder (config.json, a
   * tokenizer) rather than by its name. An existing `final` with other bytes belongs to the model
   * beside it: it is replaced only when that model is `owner` itself (`owner` exists and no other
   * weight file is in the folder), or with `force`; SidecarConflictError otherwise.
   */
  async sidecar(owner: string, final: string, data: string | Uint8Array): Promise<void> {
    if (!this.force && fs.existsSync(final) && !holds(final, data)) {
      const dir = nodePath.dirname(nodePath.resolve(owner));
      const other = otherWeightFile(dir, nodePath.basename(owner));
      if (other !== undefined || !fs.existsSync(owner)) throw new SidecarConflictError(owner, final, other);
    }
    await this.writeFile(final, data);
  }

  /** `message` with each temporary's path replaced by its destination's (errors name the user's paths). */
  userPaths(message: string): string {
    for (const s of this.staged) {
      message = message.split(s.temp).join(s.final);
      // A failed rename: "rename 'FINAL' -> 'FINAL'" says it once.
      message = message.split(`'${s.final}' -> '${s.final}'`).join(`'${s.final}'`);
    }
    return message;
  }

  /** Renames every staged file into place, then syncs the folders that changed. */
  async commit(): Promise<void> {
    if (this.signal?.aborted) throw new AbortError('The write was aborted', { cause: this.signal.reason });
    const dirs = new Set<string>();
    for (const s of this.staged) {
      // A finished folder's files were synced as they were written; sync the folder entries too.
      if (fs.statSync(s.temp).isDirectory()) await syncTree(s.temp);
      await fsp.rename(s.temp, s.final);
      liveTemporaries.delete(s.temp);
      dirs.add(nodePath.dirname(nodePath.resolve(s.final)));
    }
    this.staged.length = 0;
    for (const dir of dirs) await syncDir(dir);
  }

  /** Removes every temporary (and the destination folders this write created). */
  async discard(): Promise<void> {
    for (const s of this.staged) {
      await fsp.rm(s.temp, { recursive: true, force: true });
      liveTemporaries.delete(s.temp);
    }
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
  const out = new OutputFiles(inputFilesOf(weights), options.signal, options.force);
  try {
    await body(out);
    await out.commit();
  } catch (error) {
    nameDestinations(error, out);
    await out.discard();
    throw error;
  }
}

/** An error from a write names the destinations the user asked for, never the temporaries. */
function nameDestinations(error: unknown, out: OutputFiles): void {
  // Duck-typed: Node's own errors may come from another realm (a vm context).
  if (typeof error !== 'object' || error === null || typeof (error as Error).message !== 'string') return;
  const errno = error as NodeJS.ErrnoException & { dest?: string };
  errno.message = out.userPaths(errno.message);
  if (typeof errno.path === 'string') errno.path = out.userPaths(errno.path);
  if (typeof errno.dest === 'string') errno.dest = out.userPaths(errno.dest);
}
