// The mixture-of-experts rows of peers.js (--only moe): random-weight GGUFs of Qwen3-30B-A3B's
// shape in llama-quantize's Q4_K_M mix and of gpt-oss-20b's in its MXFP4_MOE mix
// (make-moe-gguf.js; --moe-layers writes fewer layers where the machine cannot hold the file), the
// same sides as the dense rows (weightmap, llama-bench, node-llama-cpp), interleaved. weightmap's
// side is left out, with the reason, where its reader does not know the architecture (gpt-oss
// before its engine is merged).
// Bound of decode: read bandwidth ÷ the bytes one token reads: attention matrices, norms, router,
// the classifier, one embedding row, k/n of every layer's stacked experts (the k active experts'
// bytes: every expert of a layer has the same size) and the f16 KV cache of positions 0 .. DECODE;
// bytes counted from the generator's own tensor list, so the bound does not depend on any side's
// reader. The read probe (read-bandwidth.js) streams the first 4 GiB of the Qwen3-MoE file's
// mapping. Prefill's bound: int8 peak for the active matrices' multiply-adds, f32 for attention.
// Then, for Qwen3-MoE at the largest thread count: weightmap's resident set after a 512-token
// generation against the file size (RssFile: the pages of the mapping the experts routed to have
// brought in), and the time to the first token of a freshly mapped file (its cached pages dropped
// first, posix_fadvise DONTNEED through dd) against the dense Qwen3-0.6B-shaped Q8_0 file's.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { readWeights, closeWeights } = require('../../../dist/cjs/index.js');
const { DecoderEngine } = require('../../../dist/cjs/engines/decoder');
const { SHAPES, tensorList } = require('../make-moe-gguf');
const { kvBytesPerToken } = require('../decoder-work');
const { runJson } = require('./run-json');

// layers: all of them (18.6 GB and 13.6 GB files); --moe-layers N for a machine that cannot hold them.
const MODELS = [
  { arch: 'qwen3moe', title: 'Qwen3-30B-A3B-shaped Q4_K_M', file: 'qwen3-30b-a3b', layers: 48 },
  { arch: 'gpt-oss', title: 'gpt-oss-20b-shaped MXFP4', file: 'gpt-oss-20b', layers: 24 },
];
const PROBE_BYTES = 4 * 2 ** 30;
const RESIDENT_TOKENS = 512;

/** Bytes one decode token reads and multiply-adds one prefill token costs, from the generator's tensor list. */
function moeWork(arch, layers, prompt, decode) {
  const s = { ...SHAPES[arch], layers };
  const share = s.used / s.experts;
  let bytes = 0;
  let linear = 0;
  for (const t of tensorList(arch, s)) {
    const expert = t.name.includes('_exps.');
    const values = t.dims.reduce((a, b) => a * b, 1);
    if (t.name === 'token_embd.weight') bytes += t.bytes / s.vocab;
    else bytes += expert ? t.bytes * share : t.bytes;
    if (t.dims.length < 2 || t.name === 'token_embd.weight' || t.name.endsWith('.bias')) continue;
    linear += t.name === 'output.weight' ? values / prompt : expert ? values * share : values;
  }
  const kvPerPosition = layers * 2 * s.kvHeads * s.headDim * 2;
  const attention = layers * s.heads * s.headDim * 2 * ((prompt + 1) / 2);
  return { bytesPerToken: bytes + kvBytesPerToken(kvPerPosition, 0, decode), macs: { linear, attention }, vocab: s.vocab };
}

function ensureModel(cacheDir, arch, file, layers) {
  const out = path.join(cacheDir, 'models', `${file}${layers === SHAPES[arch].layers ? '' : `-${layers}l`}.gguf`);
  if (fs.existsSync(out)) return out;
  fs.mkdirSync(path.dirname(out), { recursive: true });
  const r = spawnSync(process.execPath, [path.join(__dirname, '..', 'make-moe-gguf.js'), `${out}.partial`, '--arch', arch, '--layers', layers], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`make-moe-gguf.js ${arch} failed (${r.status})`);
  fs.renameSync(`${out}.partial`, out);
  return out;
}

const dropCache = (file) => spawnSync('dd', [`if=${file}`, 'iflag=nocache', 'count=0', 'status=none'], { stdio: 'inherit' });

/** { info, rows, resident, firstToken } in the shape of peers.js's interleave(). */
async function moeRows({ threads: threadList, interleave, decoderSides, cache, prompt, decode, layers, denseFile, runTimeout }) {
  const { info, sides } = decoderSides();
  const rows = [];
  let probe = null; // the Qwen3-MoE mapping, for the read probe of every row
  const skipped = {};
  for (const m of MODELS) {
    const n = layers ?? m.layers;
    const file = ensureModel(cache.CACHE, m.arch, m.file, n);
    const work = moeWork(m.arch, n, prompt, decode);
    const size = fs.statSync(file).size;
    const weights = await readWeights(file);
    let runs = true; // whether weightmap's decoder engine takes this file (a load maps, reads nothing proportional)
    try {
      (await DecoderEngine.load(weights, { threads: 1 })).dispose();
    } catch (error) {
      if (error.code !== 'ERR_WEIGHTMAP_UNSUPPORTED') throw error;
      runs = false;
      skipped[m.title] = `weightmap left out (its engine does not run this architecture yet): ${error.message.split('\n')[0]}`;
      console.error(`${m.title}: ${skipped[m.title]}`);
    }
    probe ??= weights;
    if (!probe) throw new Error('the read probe needs the Qwen3-MoE file mapped: pass a --moe-layers that fits');
    const view = probe.sources[0].bytes;
    const probeView = view.subarray(0, Math.min(view.byteLength, PROBE_BYTES));
    for (const threads of threadList) {
      const measures = {};
      for (const [name, s] of Object.entries(sides)) {
        if (name === 'weightmap' && !runs) continue;
        measures[name] = { measure: () => s.run(file, work.vocab, threads), bound: (peak) => s.bound(work, peak) };
      }
      const result = await interleave(`${m.arch} ${threads}t`, measures, threads, probeView);
      rows.push({ model: `${m.title}${n === SHAPES[m.arch].layers ? '' : ` (${n} of ${SHAPES[m.arch].layers} layers)`}`, threads, decodeMBPerToken: work.bytesPerToken / 1e6, fileGB: fs.statSync(file).size / 1e9, ...result });
    }
    if (weights && weights !== probe) closeWeights(weights);
  }
  // Resident set and first token: Qwen3-MoE, weightmap, the largest thread count.
  const threads = Math.max(...threadList);
  const moeFile = ensureModel(cache.CACHE, 'qwen3moe', MODELS[0].file, layers ?? MODELS[0].layers);
  closeWeights(probe);
  const child = (...a) => runJson(process.execPath, [path.join(__dirname, 'moe-weightmap.js'), ...a], runTimeout);
  const resident = child('resident', moeFile, threads, RESIDENT_TOKENS);
  console.error(`resident after ${RESIDENT_TOKENS} tokens: file pages ${(resident.rssFileBytes / 1e9).toFixed(2)} GB of ${(resident.fileBytes / 1e9).toFixed(2)} GB, anonymous ${(resident.rssAnonBytes / 1e9).toFixed(2)} GB`);
  const firstToken = { moe: [], dense: [] };
  for (let round = 0; round < 2; round++) {
    for (const [key, file] of [['dense', denseFile], ['moe', moeFile]]) {
      dropCache(file);
      firstToken[key].push(child('first', file, threads).firstTokenMs);
      console.error(`first token, freshly mapped ${key}: ${firstToken[key].at(-1).toFixed(0)} ms`);
    }
  }
  return { info, rows, skipped, resident: { ...resident, threads }, firstToken: { ...firstToken, threads } };
}

module.exports = { moeRows, moeWork };
