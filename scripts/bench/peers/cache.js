// The peers of the side-by-side benchmark, installed on demand into a cache folder outside the
// repository (WEIGHTMAP_PEERS_CACHE, default ~/.cache/weightmap-peers); nothing enters package.json:
//  - node-llama-cpp from npm (prebuilt llama.cpp binaries come as optional dependencies);
//  - llama.cpp's llama-bench and llama-quantize, built with cmake from the source bundle inside node-llama-cpp's
//    package (llama/gitRelease.bundle: the llama.cpp release that node-llama-cpp ships);
//  - @huggingface/transformers with onnxruntime-node, whose install script would download CUDA
//    binaries: scripts are skipped (and told to skip); the CPU binary ships in the npm tarball.
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const CACHE = process.env.WEIGHTMAP_PEERS_CACHE ?? path.join(os.homedir(), '.cache', 'weightmap-peers');
const modules = path.join(CACHE, 'node_modules');

function packageJson(name) {
  const file = path.join(modules, name, 'package.json');
  return fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : null;
}

function npmInstall(specs) {
  fs.mkdirSync(CACHE, { recursive: true });
  console.error(`installing ${specs.join(' ')} into ${CACHE} ...`);
  execFileSync('npm', ['install', '--prefix', CACHE, '--no-audit', '--no-fund', '--ignore-scripts', ...specs], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip', ONNXRUNTIME_NODE_INSTALL_CUDA: 'skip' },
  });
}

/** { version, entry }: node-llama-cpp's ESM entry point (a path, for import()). */
function nodeLlamaCpp() {
  if (!packageJson('node-llama-cpp')) npmInstall(['node-llama-cpp@3']);
  const pkg = packageJson('node-llama-cpp');
  return { version: pkg.version, entry: path.join(modules, 'node-llama-cpp', 'dist', 'index.js') };
}

/** { path, release, commit }: a llama.cpp tool (`target`) built from node-llama-cpp's llama.cpp bundle (once; a long build). */
function llamaCppTool(target) {
  nodeLlamaCpp();
  const llama = path.join(modules, 'node-llama-cpp', 'llama');
  const { tag: release } = JSON.parse(fs.readFileSync(path.join(llama, 'llama.cpp.info.json'), 'utf8'));
  const source = path.join(CACHE, 'llama.cpp');
  const build = path.join(source, 'build');
  const binary = path.join(build, 'bin', target);
  if (!fs.existsSync(path.join(source, 'CMakeLists.txt'))) {
    fs.rmSync(source, { recursive: true, force: true });
    execFileSync('git', ['clone', '--quiet', path.join(llama, 'gitRelease.bundle'), source], { stdio: 'inherit' });
  }
  if (!fs.existsSync(binary)) {
    const jobs = process.env.WEIGHTMAP_PEERS_JOBS ?? '2';
    console.error(`building ${target} (llama.cpp ${release}) in ${build} with ${jobs} jobs; this takes a while ...`);
    const nice = (args) => execFileSync('nice', ['-n', '10', 'cmake', ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
    nice(['-S', source, '-B', build, '-DCMAKE_BUILD_TYPE=Release', '-DGGML_NATIVE=ON', '-DLLAMA_BUILD_TESTS=OFF',
      '-DLLAMA_BUILD_EXAMPLES=ON', '-DLLAMA_BUILD_TOOLS=ON', '-DLLAMA_BUILD_SERVER=OFF', '-DLLAMA_BUILD_APP=OFF', '-DLLAMA_OPENSSL=OFF',
      '-DLLAMA_BUILD_UI=OFF', '-DLLAMA_USE_PREBUILT_UI=OFF']);
    nice(['--build', build, '--target', target, '-j', jobs]);
  }
  const commit = execFileSync('git', ['-C', source, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  return { path: binary, release, commit };
}

/**
 * llama-bench, with `env`: where ggml's CPU backend was also built without AMX (build-noamx: on
 * machines that advertise AMX but fault in ggml's AMX matrix product, as this project's shared VM
 * does: every model segfaults in ggml_backend_amx_mul_mat), LD_LIBRARY_PATH points there (the
 * binary's RUNPATH yields to it). Build it with the same cmake options, -DGGML_NATIVE=OFF, the
 * machine's AVX-512 flags on and GGML_AMX_* off, target ggml-cpu only.
 */
const llamaBench = () => {
  const tool = llamaCppTool('llama-bench');
  const noAmx = path.join(CACHE, 'llama.cpp', 'build-noamx', 'bin');
  return { ...tool, env: fs.existsSync(path.join(noAmx, 'libggml-cpu.so')) ? { LD_LIBRARY_PATH: noAmx } : undefined };
};
const llamaQuantize = () => llamaCppTool('llama-quantize');
/** llama-embedding (examples/embedding): the reference for embedding and ranking GGUFs. */
const llamaEmbedding = () => llamaCppTool('llama-embedding');
/** llama-mtmd-cli (tools/mtmd): the reference for a language model + mmproj pair. */
const llamaMtmd = () => llamaCppTool('llama-mtmd-cli');

/** { version, entry, onnxruntime }: transformers.js and the version of the onnxruntime-node under it. */
function transformers() {
  if (!packageJson('@huggingface/transformers')) npmInstall(['@huggingface/transformers@4']);
  const ort = path.join(modules, 'onnxruntime-node');
  const binding = path.join(ort, 'bin', 'napi-v6', process.platform, process.arch, 'onnxruntime_binding.node');
  if (!fs.existsSync(binding)) throw new Error(`onnxruntime-node in ${ort} has no prebuilt binding for ${process.platform}-${process.arch} in its npm tarball (${binding})`);
  return {
    version: packageJson('@huggingface/transformers').version,
    onnxruntime: packageJson('onnxruntime-node').version,
    entry: path.join(modules, '@huggingface', 'transformers', 'dist', 'transformers.node.mjs'),
  };
}

module.exports = { CACHE, nodeLlamaCpp, llamaBench, llamaQuantize, llamaEmbedding, llamaMtmd, llamaCppTool, transformers };
