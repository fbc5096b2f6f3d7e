/**
 * `weightmap serve MODEL [--embedder MODEL] [--host 127.0.0.1] [--port 8080] [--api-key KEY]`:
 * the OpenAI-compatible server (lib/server). Prints the address it is bound to (port 0: the port
 * the system picked); SIGTERM or SIGINT stop it once the requests in flight are answered.
 */
import type { AddressInfo } from 'node:net';
import type { Command } from 'commander';
import { loadEmbedder, type Embedder } from '../embedder';
import { loadModel } from '../model';
import { createServer } from '../server';
import { addModelOptions, modelOptions } from './model-options';
import { action, intOption } from './run-command';

export function registerServe(program: Command): void {
  const command = program
    .command('serve')
    .description('serve a model over an OpenAI-compatible HTTP API (chat, completions, embeddings)')
    .argument('<model>', 'weight file or folder of the text model')
    .option('--embedder <model>', 'an embedding model to serve at /v1/embeddings')
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--port <n>', 'port to bind (0: any free port)', intOption(0, 65535), 8080)
    .option('--api-key <key>', 'require Authorization: Bearer KEY (default: $WEIGHTMAP_API_KEY, else none)')
    .option('--max-active <n>', 'generations running at once (default 4)', intOption(1))
    .option('--max-queued <n>', 'requests waiting before 429 (default 64)', intOption(0));
  addModelOptions(command).action(
    action(async (modelPath: string, opts: Record<string, unknown>) => {
      const model = await loadModel(modelPath, modelOptions(opts));
      let embedder: Embedder | undefined;
      if (opts.embedder !== undefined) embedder = await loadEmbedder(opts.embedder as string, opts.threads !== undefined ? { threads: opts.threads as number } : {});
      const server = createServer({
        model,
        embedder,
        apiKey: (opts.apiKey as string | undefined) ?? (process.env.WEIGHTMAP_API_KEY || undefined),
        maxActive: opts.maxActive as number | undefined,
        maxQueued: opts.maxQueued as number | undefined,
      });
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(opts.port as number, opts.host as string, () => resolve());
      });
      const { address, port, family } = server.address() as AddressInfo;
      const host = family === 'IPv6' ? `[${address}]` : address;
      process.stdout.write(`weightmap serve: listening on http://${host}:${port}\n`);
      await new Promise<void>((resolve) => {
        const stop = () => {
          process.stderr.write('weightmap serve: draining the requests in flight\n');
          process.off('SIGTERM', stop);
          process.off('SIGINT', stop);
          resolve();
        };
        process.on('SIGTERM', stop);
        process.on('SIGINT', stop);
      });
      await server.drain();
      model.dispose();
      embedder?.dispose();
    }),
  );
}
