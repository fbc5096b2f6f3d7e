/**
 * `weightmap stage MODEL_DIR --layers 0-13 [--listen 127.0.0.1:0]`: serves one layer range of a
 * sepweight tree to pipeline coordinators (lib/pipeline). Prints the bound address as one JSON
 * line on stdout, then serves until SIGTERM or SIGINT, which drain it gracefully.
 */
import * as fs from 'node:fs';
import type { Command } from 'commander';
import { TOKEN_ENV } from '../pipeline/auth';
import { parseLayerRange } from '../pipeline/layers';
import { STAGE_DEFAULTS, StageServer } from '../pipeline/stage-server';
import { writeOut } from './generate';
import { action, intOption, threadsOption } from './run-command';

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

export function registerStage(program: Command): void {
  program
    .command('stage')
    .description('serve a layer range of a sepweight tree as a pipeline stage (gRPC)')
    .argument('<model>', 'sepweight folder (weightmap convert ... --to sepweight)')
    .requiredOption('--layers <first-last>', 'the layers to serve, inclusive: 0-13')
    .option('--listen <host:port>', 'address to bind; any non-loopback address needs TLS', '127.0.0.1:0')
    .option('--threads <n>', 'engine threads, 1 to the logical cores (default: physical cores)', threadsOption)
    .option('--quant <type>', 'none (as stored), q8_0 (quantize at load) or f32 (dequantize)')
    .option('--context <n>', 'positions each session holds (default: min(model maximum, 4096))', intOption(1))
    .option('--token <token>', `callers must send this bearer token (default: $${TOKEN_ENV})`)
    .option('--tls-cert <file>', 'PEM certificate chain of the stage')
    .option('--tls-key <file>', 'PEM private key of the stage')
    .option('--tls-ca <file>', 'PEM CA of client certificates: mutual TLS')
    .option('--allow-client <name>', 'with mutual TLS: a client certificate CN allowed to call (repeatable)', collect)
    .option('--idle-timeout <seconds>', `free a session with no step running or waiting for this long (default ${STAGE_DEFAULTS.idleTimeoutMs / 1000})`, intOption(1))
    .option('--max-sessions <n>', `sessions open at once; past it RESOURCE_EXHAUSTED (default ${STAGE_DEFAULTS.maxSessions})`, intOption(1))
    .option('--metrics-listen <host:port>', 'serve GET /metrics (Prometheus text, plain HTTP) here; needs --token when set, unless --metrics-public (default: none)')
    .option('--metrics-public', 'GET /metrics needs no token')
    .option('--max-kv-bytes <n>', `KV cache bytes of all sessions together; past it RESOURCE_EXHAUSTED (default ${STAGE_DEFAULTS.maxKvBytes})`, intOption(1))
    .action(
      action(async (dir: string, opts: Record<string, unknown>) => {
        const read = (flag: string) => (opts[flag] === undefined ? undefined : fs.readFileSync(opts[flag] as string));
        const token = (opts.token as string | undefined) ?? process.env[TOKEN_ENV];
        const tls = { cert: read('tlsCert'), key: read('tlsKey'), ca: read('tlsCa') };
        const stage = await StageServer.start(dir, {
          layers: parseLayerRange(opts.layers as string),
          listen: opts.listen as string,
          ...(opts.threads !== undefined ? { threads: opts.threads as number } : {}),
          ...(opts.context !== undefined ? { contextLength: opts.context as number } : {}),
          ...(opts.quant !== undefined ? { quant: opts.quant as 'none' | 'q8_0' | 'f32' } : {}),
          ...(opts.idleTimeout !== undefined ? { idleTimeoutMs: (opts.idleTimeout as number) * 1000 } : {}),
          ...(opts.maxSessions !== undefined ? { maxSessions: opts.maxSessions as number } : {}),
          ...(opts.maxKvBytes !== undefined ? { maxKvBytes: opts.maxKvBytes as number } : {}),
          ...(token ? { token } : {}),
          ...(tls.cert || tls.key || tls.ca ? { tls } : {}),
          ...(opts.allowClient ? { allowClients: opts.allowClient as string[] } : {}),
          ...(opts.metricsListen !== undefined ? { metricsListen: opts.metricsListen as string, metricsPublic: opts.metricsPublic === true } : {}),
        });
        const { info } = stage;
        await writeOut(`${JSON.stringify({ address: stage.address, layers: stage.layers, model: info.modelHash, maxPositions: info.maxPositions, ...(stage.metricsAddress ? { metrics: stage.metricsAddress } : {}) })}\n`);
        await new Promise<void>((resolve) => {
          const stop = () => {
            process.removeListener('SIGTERM', stop);
            process.removeListener('SIGINT', stop);
            void stage.drain().then(resolve);
          };
          process.once('SIGTERM', stop);
          process.once('SIGINT', stop);
        });
      }),
    );
}
