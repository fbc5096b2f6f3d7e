/**
 * require('weightmap') loads no gRPC, no ajv and no Jinja: the pipeline's and the server's
 * dependencies, and the Jinja engine of HF / GGUF chat templates, load when first used
 * (lib/lazy.ts), so a process that does not use them does not pay for them.
 * Checked in a fresh process on the built package (`npm run build:ts`), by the modules in require.cache.
 */
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';

const root = path.join(__dirname, '..', '..');
const HEAVY = ['@grpc/grpc-js', '@grpc/proto-loader', 'grpc-health-check', 'protobufjs', 'ajv', '@huggingface/jinja'];

/** The packages under node_modules that `script` has loaded by its end. */
function packagesLoadedBy(script: string): string[] {
  const report = "console.log(JSON.stringify([...new Set(Object.keys(require.cache).map((f) => f.split('node_modules/')[1]).filter(Boolean).map((p) => p.split('/').slice(0, p.startsWith('@') ? 2 : 1).join('/')))]))";
  return JSON.parse(execFileSync(process.execPath, ['-e', `${script};${report}`], { cwd: root, encoding: 'utf8' }).trim()) as string[];
}

describe('dependencies loaded on first use', () => {
  test("require('weightmap') loads none of gRPC, proto-loader, the health check, protobufjs, ajv and Jinja", () => {
    const loaded = packagesLoadedBy("require('weightmap')");
    for (const name of HEAVY) expect(loaded).not.toContain(name);
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
});
