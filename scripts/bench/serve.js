#!/usr/bin/env node
// Load benchmark of `weightmap serve`: starts the server (the CLI, in a child process, on a
// loopback port) and runs rounds of N concurrent streaming clients (POST /v1/completions with
// stream: true, greedy, a fixed number of tokens each). Per N: time to first token p50/p99 (from
// sending the request to the first event with text), inter-token latency p50/p99 (between one
// stream's successive text events), aggregate tok/s (all completion tokens of the round ÷ the
// round's wall time), the server's RSS after the round and the 1-minute load average at its end.
// First line: the machine (CPU name, family / model, logical CPUs, load), threads and settings.
// Needs `npm run build:ts` (dist/) and the addon.
//   node scripts/bench/serve.js [--model PATH] [--tokenizer PATH] [--clients 1,4,16]
//                               [--tokens 64] [--max-active 8] [--context 512] [--threads N]
'use strict';
require('../args').scriptArgs('serve.js [--model PATH] [--tokenizer PATH] [--clients 1,4,16] [--tokens 64] [--max-active 8] [--context 512] [--threads N]', { options: { model: 'string', tokenizer: 'string', clients: 'string', tokens: 'string', 'max-active': 'string', context: 'string', threads: 'string' } });
const fs = require('node:fs');
const os = require('node:os');
const http = require('node:http');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { performance } = require('node:perf_hooks');
const { machine } = require('./machine');

const args = process.argv.slice(2);
const opt = (name, def) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : def);
const FIXTURE = path.join(__dirname, '..', '..', '..', 'shared', 'fixtures', 'llama-stories260k');
const model = opt('model', path.join(FIXTURE, 'stories260K.bin'));
const tokenizer = opt('tokenizer', opt('model') === undefined ? path.join(FIXTURE, 'tok512.bin') : undefined);
const clientCounts = opt('clients', '1,4,16').split(',').map(Number);
const tokens = Number(opt('tokens', '64'));
const maxActive = opt('max-active', '8');
const context = opt('context', '512');
const threads = opt('threads');

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
  const body = JSON.stringify({ model: modelId, prompt: 'Once upon a time', max_tokens: tokens, temperature: 0, stream: true, stream_options: { include_usage: true } });
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
  const server = await startServer();
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
    `threads ${threads ?? `the default (physical cores)`}; model ${modelId}, ${tokens} tokens per request, greedy, --max-active ${maxActive}, --context ${context}`);
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
    console.log(`| ${n} | ${percentile(ttfts, 50).toFixed(1)} | ${percentile(ttfts, 99).toFixed(1)} | ${itl(50)} | ${itl(99)} | ${(total / seconds).toFixed(0)} | ${serverRssMiB(server.child.pid)} | ${os.loadavg()[0].toFixed(2)} |`);
  }
  agent.destroy();
  server.child.kill('SIGTERM');
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
