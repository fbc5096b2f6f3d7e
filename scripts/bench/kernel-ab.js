#!/usr/bin/env node
// Kernel A/B that a noisy machine cannot blur: the decode matvec kernels of a git ref (default
// HEAD) and of this working tree built into ONE binary (each tree's native/kernels under its own
// namespace, kernel-ab-side.cc exporting its entry points), then timed in turns over one token's
// matrices of Qwen3-0.6B's shape (make-gguf.js's SHAPE) on 2 MB pages, 1 thread, with a read of
// the same bytes before each pair (kernel-ab.cc). Other load slows both sides of a pair alike, so
// the per-pair ratio new / base is what a change did; the outputs are compared bitwise.
// x86-64 Linux with g++ and AVX-512 VNNI. The compile flags are CMakeLists.txt's.
//   node scripts/bench/kernel-ab.js [--base REF] [--kinds q8:64,q8:32,f16,q4_k,q6_k,q8_0,q4_0]
//                                   [--isa avx512vnni|avx2] [--pairs 11] [--json]
'use strict';
require('../args').scriptArgs('kernel-ab.js [--base REF] [--kinds q8:64,q8:32,f16,q4_k,q6_k,q8_0,q4_0] [--isa avx512vnni] [--pairs 11] [--json]', { options: { base: 'string', kinds: 'string', isa: 'string', pairs: 'string', json: 'boolean' } });
const { execFileSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { SHAPE, BLOCKS, BLOCK_IDS } = require('./make-gguf');

const ROOT = path.resolve(__dirname, '..', '..');
const args = process.argv.slice(2);
const opt = (name, def) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : def);

/** Compile flags from CMakeLists.txt: the common ones, per ISA suffix, and per file. */
function cmakeFlags() {
  const text = fs.readFileSync(path.join(ROOT, 'CMakeLists.txt'), 'utf8');
  const common = /target_compile_options\(\$\{PROJECT_NAME\} PRIVATE (-O3[^)]*)\)/.exec(text);
  if (!common) throw new Error('CMakeLists.txt: no target_compile_options with -O3');
  const isa = {};
  for (const m of text.matchAll(/set\(WEIGHTMAP_X86_FLAGS_(\w+) ([^)]*)\)/g)) isa[m[1]] = m[2].trim().split(/\s+/);
  const perFile = {};
  for (const m of text.matchAll(/set_source_files_properties\(native\/(\S+) PROPERTIES COMPILE_OPTIONS "([^"]*)"\)/g)) perFile[m[1]] = m[2].split(/\s+/);
  return { common: common[1].trim().split(/\s+/).filter((f) => !f.startsWith('-W')), isa, perFile };
}

function run(cmd, argv) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} ${argv.join(' ')}\n${err}`))));
  });
}

/** Objects of one side: its native/kernels with its ISA subfolders (neon left out) and threadpool, and the side's exports. */
function sideJobs(side, nativeDir, outDir, flags) {
  const sources = fs
    .readdirSync(path.join(nativeDir, 'kernels'), { recursive: true })
    .filter((f) => f.endsWith('.cc') && !f.endsWith('_neon.cc'))
    .map((f) => `kernels/${f}`)
    .concat('threadpool.cc');
  const jobs = sources.map((rel) => {
    const suffix = /_(avx2|avx512|pclmul)\.cc$/.exec(rel)?.[1];
    const argv = [...flags.common, '-std=c++17', '-fPIC', `-I${nativeDir}`, `-Dweightmap=wm_${side}`];
    if (suffix) argv.push(...flags.isa[suffix]);
    if (flags.perFile[rel]) argv.push(...flags.perFile[rel]);
    return [...argv, '-c', path.join(nativeDir, rel), '-o', path.join(outDir, `${side}-${rel.replace(/\//g, '-')}.o`)];
  });
  jobs.push([...flags.common, '-std=c++17', `-I${nativeDir}`, `-Dweightmap=wm_${side}`, `-DAB_SIDE=${side}`,
    ...flags.isa.avx512, '-c', path.join(__dirname, 'kernel-ab-side.cc'), '-o', path.join(outDir, `${side}-side.o`)]);
  return jobs;
}

async function build(baseRef, dir) {
  const baseNative = path.join(dir, 'base');
  fs.mkdirSync(baseNative, { recursive: true });
  const tar = execFileSync('git', ['-C', ROOT, 'archive', '--format=tar', baseRef, 'native'], { maxBuffer: 1 << 30 });
  execFileSync('tar', ['-x', '-C', baseNative], { input: tar });
  const newNative = path.join(dir, 'new', 'native');
  fs.cpSync(path.join(ROOT, 'native'), newNative, { recursive: true });
  const flags = cmakeFlags();
  const jobs = [...sideJobs('base', path.join(baseNative, 'native'), dir, flags), ...sideJobs('new', newNative, dir, flags)];
  const workers = Math.max(1, os.availableParallelism?.() ?? os.cpus().length);
  for (let i = 0; i < jobs.length; i += workers) await Promise.all(jobs.slice(i, i + workers).map((j) => run('g++', j)));
  const binary = path.join(dir, 'kernel-ab');
  const objects = fs.readdirSync(dir).filter((f) => f.endsWith('.o')).map((f) => path.join(dir, f));
  await run('g++', ['-O2', '-o', binary, path.join(__dirname, 'kernel-ab.cc'), ...objects, '-lpthread']);
  return binary;
}

/** kernel-ab.cc's KIND for a --kinds entry: q8:GROUP, f16, or a ggml block type by name. */
function kindArg(name) {
  if (name.startsWith('q8:') || name === 'f16') return name;
  const id = BLOCK_IDS[name];
  if (id === undefined) throw new Error(`unknown kind ${name} (q8:GROUP, f16 or one of ${Object.keys(BLOCK_IDS).join(', ')})`);
  const [values, bytes, f16] = BLOCKS[id];
  return `ggml:${name}:${values}:${bytes}:${f16.join(',')}`;
}

async function main() {
  const baseRef = opt('base', 'HEAD');
  const kinds = opt('kinds', 'q8:64,q8:32,f16,q4_k,q6_k,q8_0,q4_0').split(',');
  const isa = opt('isa', 'avx512vnni');
  const pairs = opt('pairs', '11');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weightmap-kernel-ab-'));
  try {
    const binary = await build(baseRef, dir);
    const { dim, hidden, layers, heads, kvHeads, headDim, vocab } = SHAPE;
    const results = [];
    for (const kind of kinds) {
      const out = execFileSync(binary, [kindArg(kind), dim, hidden, heads * headDim, kvHeads * headDim, layers, vocab, pairs, isa].map(String), {
        encoding: 'utf8',
      });
      const r = JSON.parse(out);
      results.push(r);
      if (!args.includes('--json')) {
        console.log(
          `${kind.padEnd(6)} ${r.isa}: new/base per pair median ${r.medianNewOverBase.toFixed(3)} [${Math.min(...r.newOverBase).toFixed(3)}, ` +
            `${Math.max(...r.newOverBase).toFixed(3)}]; share of the read: base ${(100 * r.medianBaseShare).toFixed(0)}%, ` +
            `new ${(100 * r.medianNewShare).toFixed(0)}%; outputs ${r.bitwiseSame ? 'bitwise the same' : 'DIFFER'}`,
        );
      }
    }
    const load = os.loadavg()[0].toFixed(2);
    if (args.includes('--json')) console.log(JSON.stringify({ base: baseRef, isa, pairs: Number(pairs), load, results }, null, 2));
    else console.log(`base ${baseRef}, ${pairs} pairs, 1 thread, load ${load}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e.message ?? e);
  process.exit(1);
});
