/**
 * require('weightmap') loads no gRPC, no ajv, no prom-client and no Jinja: the pipeline's and the server's
 * dependencies, and the Jinja engine of HF / GGUF chat templates, load when first used
 * (lib/base/lazy.ts), so a process that does not use them does not pay for them.
 * Checked in a fresh process on the built package (`npm run build:ts`), by the modules in require.cache.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fixture, tempDir } from '../helpers/fixtures';

const root = path.join(__dirname, '..', '..');
const HEAVY = ['@grpc/grpc-js', '@grpc/proto-loader', 'grpc-health-check', 'protobufjs', 'ajv', '@huggingface/jinja', 'prom-client'];

/** The packages under node_modules that `script` has loaded by its end. */
function packagesLoadedBy(script: string): string[] {
  const report = "console.log(JSON.stringify([...new Set(Object.keys(require.cache).map((f) => f.split('node_modules/')[1]).filter(Boolean).map((p) => p.split('/').slice(0, p.startsWith('@') ? 2 : 1).join('/')))]))";
  return JSON.parse(execFileSync(process.execPath, ['-e', `${script};${report}`], { cwd: root, encoding: 'utf8' }).trim()) as string[];
}

describe('dependencies loaded on first use', () => {
  test("require('weightmap') loads none of gRPC, proto-loader, the health check, protobufjs, ajv, Jinja and prom-client", () => {
    const loaded = packagesLoadedBy("require('weightmap')");
    for (const name of HEAVY) expect(loaded).not.toContain(name);
  });

  test("require('weightmap') loads none of the modules a first token does not need; reading such an export loads it", () => {
    const script = "const w = require('weightmap'); const loaded = () => Object.keys(require.cache).filter((f) => f.includes('/dist/cjs/')).map((f) => f.split('/dist/cjs/')[1]);"
      + "const before = loaded(); const same = [w.createServer === require('./dist/cjs/server').createServer, w.StageServer === require('./dist/cjs/pipeline/stage-server').StageServer,"
      + "w.Embedder === require('./dist/cjs/models/embedder').Embedder, w.MoondreamModel === require('./dist/cjs/models/moondream').MoondreamModel, w.convert === require('./dist/cjs/formats/writing/convert').convert,"
      + "w.compileJsonSchema === require('./dist/cjs/constrain').compileJsonSchema, w.ChatSession === require('./dist/cjs/models/chat-session').ChatSession];"
      + "console.log(JSON.stringify({ before, same }))";
    const { before, same } = JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: root, encoding: 'utf8' }).trim()) as { before: string[]; same: boolean[] };
    for (const lazyModule of ['server/index.js', 'pipeline/stage-server.js', 'models/embedder.js', 'engines/bert.js', 'models/moondream.js', 'models/moondream-model.js', 'engines/moondream.js', 'engines/gpt.js', 'constrain/index.js', 'formats/writing/convert.js', 'formats/quantization/dequantize.js', 'models/chat-session.js']) {
      expect(before).not.toContain(lazyModule);
    }
    expect(before).toContain('models/model.js');
    expect(same).toEqual([true, true, true, true, true, true, true]);
  });

  test('a first token from a GGUF with its tokenizer cached loads neither node:crypto, node:zlib nor node:worker_threads', () => {
    // A script file: `node -e` loads node:crypto itself.
    const tmp = tempDir('weightmap-lazy-builtins-');
    try {
      const script = path.join(tmp.dir, 'first-token.js');
      fs.writeFileSync(script, `(async () => {
        const model = await require(${JSON.stringify(root)}).loadModel(${JSON.stringify(fixture('gguf-quants', 'llama-ropefreqs', 'llama-ropefreqs.Q8_0.gguf'))}, { threads: 1 });
        for await (const piece of model.generate('Hello', { maxTokens: 1 })) void piece;
        model.dispose();
        console.log(JSON.stringify(process.moduleLoadList.filter((m) => /^NativeModule (crypto|zlib|worker_threads)$/.test(m))));
      })();`);
      const run = () => JSON.parse(execFileSync(process.execPath, [script], { cwd: root, encoding: 'utf8', env: { ...process.env, WEIGHTMAP_CACHE: tmp.dir } }).trim().split('\n').pop()!) as string[];
      run(); // fills the tokenizer cache
      expect(run()).toEqual([]);
    } finally {
      tmp.cleanup();
    }
  });

  test('the stage schema loads gRPC and proto-loader', () => {
    const loaded = packagesLoadedBy("require('weightmap'); require('./dist/cjs/pipeline/schema').stageService()");
    expect(loaded).toEqual(expect.arrayContaining(['@grpc/grpc-js', '@grpc/proto-loader']));
  });

  test('a Jinja chat template loads Jinja', () => {
    const loaded = packagesLoadedBy("require('weightmap').jinjaChatTemplate('{{ messages[0].content }}')");
    expect(loaded).toContain('@huggingface/jinja');
  });

  test("the server's request validators load ajv", () => {
    const loaded = packagesLoadedBy("require('weightmap'); require('./dist/cjs/server/validation').compileValidators()");
    expect(loaded).toContain('ajv');
  });

  test("a server's metrics load prom-client", () => {
    const loaded = packagesLoadedBy("require('weightmap'); new (require('./dist/cjs/server/metrics').ServerMetrics)()");
    expect(loaded).toContain('prom-client');
  });
});
