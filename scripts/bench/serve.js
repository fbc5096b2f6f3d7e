#!/usr/bin/env node
// Load benchmark of `weightmap serve`: starts the server (the CLI, in a child process, on a
// loopback port) and runs rounds of N concurrent streaming clients (POST /v1/completions with
// stream: true, greedy, a fixed number of tokens each). Per N: time to first token p50/p99 (from
// sending the request to the first event with text), inter-token latency p50/p99 (between one
// stream's successive text events), aggregate tok/s (all completion tokens of the round ÷ the
// round's wall time), the server's RSS after the round and the 1-minute load average at its end.
// First line: the machine (CPU name, family / model, logical CPUs, load), threads and settings.
// --gguf TYPE serves a Qwen3-0.6B-shaped GGUF with random blocks of that type (make-gguf.js, in the
// temp folder if absent, with its placeholder vocabulary so that every token is text; the prompt is
// then 16 token ids). --replicas N starts N servers and Debian's
// nginx in front of them with deploy/nginx.conf (its least-connections upstream, its upstream lines
// replaced by the replicas, its listen by a loopback port); the clients go through nginx and the RSS
// column sums the replicas'. All processes share this machine's cores.
// Needs `npm run build:ts` (dist/) and the addon.
//   node scripts/bench/serve.js [--model PATH | --gguf q8_0|q4_k_m] [--tokenizer PATH] [--clients 1,4,16]
//                               [--tokens 64] [--max-active 8] [--context 512] [--threads N] [--replicas N]
'use strict';
require('../args').scriptArgs('serve.js [--model PATH | --gguf TYPE] [--tokenizer PATH] [--clients 1,4,16] [--tokens 64] [--max-active 8] [--context 512] [--threads N] [--replicas N]', { options: { model: 'string', gguf: 'string', tokenizer: 'string', clients: 'string', tokens: 'string', 'max-active': 'string', context: 'string', threads: 'string', replicas: 'string' } });
const fs = require('node:fs');
const os = require('node:os');
const http = require('node:http');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { performance } = require('node:perf_hooks');
const { machine } = require('./machine');

const args = process.argv.slice(2);
const opt = (name, def) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : def);
const FIXTURE = path.join(__dirname, '..', '..', '..', 'shared', 'fixtures', 'llama-stories260k');
const gguf = opt('gguf');
const model = opt('model', gguf ? path.join(os.tmpdir(), `weightmap-bench-qwen3-0.6b.${gguf}.vocab.gguf`) : path.join(FIXTURE, 'stories260K.bin'));
const tokenizer = opt('tokenizer', opt('model') === undefined && !gguf ? path.join(FIXTURE, 'tok512.bin') : undefined);
// A random-block GGUF has no vocabulary worth encoding text with: its prompt is token ids.
const prompt = gguf ? Array.from({ length: 16 }, (_, i) => 1000 + i * 37) : 'Once upon a time';
const replicas = Number(opt('replicas', '1'));
const NGINX = ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/bin/nginx'].find((p) => fs.existsSync(p));
const clientCounts = opt('clients', '1,4,16').split(',').map(Number);
const tokens = Number(opt('tokens', '64'));
const maxActive = opt('max-active', '8');
const context = opt('context', '512');
const threads = opt('threads');

function makeModel() {
  if (!gguf || fs.existsSync(model)) return;
  const made = spawnSync(process.execPath, [path.join(__dirname, 'make-gguf.js'), model, '--type', gguf, '--vocab'], { stdio: 'inherit' });
  if (made.status !== 0) process.exit(1);
}

/** deploy/nginx.conf with its upstream `server` lines replaced by `ports` and its listen by `port`. */
function nginxConfig(ports, port) {
  let source = fs.readFileSync(path.join(__dirname, '..', '..', 'deploy', 'nginx.conf'), 'utf8');
  let i = 0;
  source = source.replace(/^( *)server 10\.0\.0\.1\d:8080 (.*);$/gm, (_line, indent, rest) => (i++ % 3 === 0 ? ports.map((p) => `${indent}server 127.0.0.1:${p} ${rest};`).join('\n') : ''));
  source = source.replace(/^( *)listen 8080;$/m, `$1listen 127.0.0.1:${port};`);
  return source.replace(/^worker_processes auto;$/m, 'worker_processes 1;\ndaemon off;');
}

/** nginx in front of `servers` on a free loopback port: resolves to { child, host, port }. */
async function startNginx(servers) {
  if (!NGINX) throw new Error('--replicas needs nginx (Debian: apt-get install nginx)');
  const port = await new Promise((resolve) => {
    const probe = http.createServer().listen(0, '127.0.0.1', () => {
      const { port: free } = probe.address();
      probe.close(() => resolve(free));
    });
  });
  const prefix = fs.mkdtempSync(path.join(os.tmpdir(), 'weightmap-serve-bench-nginx-'));
  fs.mkdirSync(path.join(prefix, 'logs'));
  fs.writeFileSync(path.join(prefix, 'nginx.conf'), nginxConfig(servers.map((s) => s.port), port));
  const child = spawn(NGINX, ['-p', `${prefix}/`, '-c', path.join(prefix, 'nginx.conf')], { stdio: 'inherit' });
  for (let tries = 0; tries < 200; tries++) {
    const up = await new Promise((resolve) => http.get({ host: '127.0.0.1', port, path: '/health' }, (res) => resolve(res.statusCode === 200, res.resume())).on('error', () => resolve(false)));
    if (up) return { child, host: '127.0.0.1', port, prefix };
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGKILL');
  throw new Error('nginx did not answer /health');
}

function startServer() {
  const cli = path.join(__dirname, '..', '..', 'dist', 'cjs', 'cli', 'main.js');
  const argv = [cli, 'serve', model, '--port', '0', '--max-active', maxActive, '--max-queued', '1024', '--context', context];
  if (tokenizer) argv.push('--tokenizer', tokenizer);
  if (threads) argv.push('--threads', threads);
  const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const match = /listening on http:\/\/([\d.]+):(\d+)/.exec(out);
      if (match) resolve({ child, host: match[1], port: Number(match[2]) });
    });
    child.on('exit', (code) => reject(new Error(`the server exited with ${code}`)));
  });
}

/** One streaming completion: resolves to { ttft (ms), gaps (ms between its text events), tokens }. */
function streamOnce(server, agent, modelId) {
  const body = JSON.stringify({ model: modelId, prompt, max_tokens: tokens, temperature: 0, stream: true, stream_options: { include_usage: true } });
  return new Promise((resolve, reject) => {
    const start = performance.now();
    let ttft;
    let last;
    const gaps = [];
    let usage;
    let buffer = '';
    const req = http.request({ host: server.host, port: server.port, path: '/v1/completions', method: 'POST', agent, headers: { 'Content-Type': 'application/json' } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`HTTP ${res.statusCode}`));
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        buffer += chunk;
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const line = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
          const event = JSON.parse(line.slice(6));
          if (event.choices[0]?.text) {
            const now = performance.now();
            if (ttft === undefined) ttft = now - start;
            else gaps.push(now - last);
            last = now;
          }
          if (event.usage) usage = event.usage;
        }
      });
      res.on('end', () => resolve({ ttft, gaps, tokens: usage.completion_tokens }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

// The server's resident set after a round (Linux; '-' elsewhere): flat across rounds means nothing is kept per request.
function serverRssMiB(pid) {
  try {
    const kib = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return kib ? (Number(kib[1]) / 1024).toFixed(0) : '-';
  } catch {
    return '-';
  }
}

const percentile = (values, p) => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

async function main() {
  makeModel();
  const servers = await Promise.all(Array.from({ length: replicas }, () => startServer()));
  const balancer = replicas > 1 ? await startNginx(servers) : undefined;
  const server = balancer ?? servers[0];
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  const modelId = await new Promise((resolve, reject) => {
    http.get({ host: server.host, port: server.port, path: '/v1/models', agent }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve(JSON.parse(text).data[0].id));
    }).on('error', reject);
  });
  await streamOnce(server, agent, modelId); // warm-up
  const here = machine();
  console.log(`${here.date}, ${here.cpu} (family ${here.cpuFamily}, model ${here.cpuModel}), ${here.logicalCpus} logical CPUs, load ${here.load} at the start; ` +
    `threads ${threads ?? `the default (physical cores)`}${replicas > 1 ? ` per replica, ${replicas} replicas behind nginx (deploy/nginx.conf)` : ''}; model ${modelId}, ${tokens} tokens per request, greedy, --max-active ${maxActive}, --context ${context}`);
  console.log('| clients | TTFT p50 (ms) | TTFT p99 (ms) | ITL p50 (ms) | ITL p99 (ms) | aggregate tok/s | server RSS (MiB) | load (1 min) |');
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const n of clientCounts) {
    const start = performance.now();
    const results = await Promise.all(Array.from({ length: n }, () => streamOnce(server, agent, modelId)));
    const seconds = (performance.now() - start) / 1000;
    const ttfts = results.map((r) => r.ttft);
    const gaps = results.flatMap((r) => r.gaps);
    const itl = (p) => (gaps.length ? percentile(gaps, p).toFixed(1) : '-');
    const total = results.reduce((sum, r) => sum + r.tokens, 0);
    console.log(`| ${n} | ${percentile(ttfts, 50).toFixed(1)} | ${percentile(ttfts, 99).toFixed(1)} | ${itl(50)} | ${itl(99)} | ${(total / seconds).toFixed(0)} | ${servers.reduce((sum, s) => sum + Number(serverRssMiB(s.child.pid)), 0) || '-'} | ${os.loadavg()[0].toFixed(2)} |`);
  }
  agent.destroy();
  balancer?.child.kill('SIGTERM');
  for (const s of servers) s.child.kill('SIGTERM');
  if (balancer) fs.rmSync(balancer.prefix, { recursive: true, force: true });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
