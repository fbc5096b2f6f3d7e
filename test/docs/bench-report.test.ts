/**
 * scripts/bench/report.js: the --json output of the benchmarks, as they print it (documents one
 * after another), rendered into docs/performance.md's tables under their provenance line.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { parseDocuments, render } = require('../../scripts/bench/report.js') as {
  parseDocuments: (text: string) => unknown[];
  render: (docs: unknown[], here?: Record<string, unknown>) => string;
};

const HERE = { date: '2026-12-01', cpu: 'Test CPU', cpuFamily: 25, cpuModel: 1, logicalCpus: 2, load: 0.5 };

const bench = (threads: number, prefill: number[], decode: number[]) => ({
  model: 'm.gguf', format: 'gguf', architecture: 'qwen3', threads, isa: 'avx2', loadMs: 12,
  promptTokens: 64, genTokens: 16, repetitions: 3,
  prefill: { median: prefill[1], min: prefill[0], max: prefill[2] },
  decode: { median: decode[1], min: decode[0], max: decode[2] },
});

describe('scripts/bench/report.js', () => {
  test('reads JSON documents printed one after another, braces inside strings included', () => {
    expect(parseDocuments('{"a": "}{"}\n{"b": [1, {"c": "\\"]"}]}\n')).toEqual([{ a: '}{' }, { b: [1, { c: '"]' }] }]);
    expect(() => parseDocuments('{"a": 1')).toThrow(/ends inside a JSON document/);
  });

  test('weightmap bench reports become one table, medians with their spread (whole numbers from 100, one decimal below)', () => {
    const text = `${JSON.stringify(bench(1, [98.76, 123.4, 130.2], [9.04, 9.96, 10.02]), null, 2)}\n${JSON.stringify(bench(2, [200, 250.5, 260], [15, 17.25, 18]), null, 2)}\n`;
    expect(render(parseDocuments(text), HERE).split('\n')).toEqual([
      '<!-- rendered by scripts/bench/report.js from the --json output; do not edit by hand -->',
      '',
      '- `weightmap bench m.gguf --prompt-tokens 64 --gen-tokens 16 --repetitions 3 --threads 1 --json` — 2026-12-01, Test CPU, family 25, model 1, 2 logical CPUs, load 0.5',
      '- `weightmap bench m.gguf --prompt-tokens 64 --gen-tokens 16 --repetitions 3 --threads 2 --json` — 2026-12-01, Test CPU, family 25, model 1, 2 logical CPUs, load 0.5',
      '',
      '| model | format | threads | ISA | prompt tokens | prefill tok/s median [min–max] | generated tokens | decode tok/s median [min–max] | runs |',
      '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
      '| m.gguf (qwen3) | gguf | 1 | avx2 | 64 | 123 [98.8–130] | 16 | 10.0 [9.0–10.0] | 3 |',
      '| m.gguf (qwen3) | gguf | 2 | avx2 | 64 | 251 [200–260] | 16 | 17.3 [15.0–18.0] | 3 |',
      '',
    ]);
  });

  test('a peers.js report keeps its own machine, rounds and per-row load', () => {
    const side = (median: number, bound: number) => ({ median, min: median - 1, max: median + 1, runs: [median - 1, median + 1], bound, share: median / bound });
    const report = {
      command: 'node scripts/bench/peers.js --only decoder --quick', cpu: 'AMD EPYC', pairs: 2, prompt: 512, decode: 128,
      machine: { date: '2026-11-27', cpu: 'AMD EPYC', cpuFamily: 26, cpuModel: 2, logicalCpus: 2, load: 1.2 },
      decoder: {
        info: { llama: 'v0.5.0' },
        rows: [{
          model: 'Qwen3-0.6B Q8_0', threads: 1, load: { median: 1.3, min: 1.2, max: 1.4 },
          metrics: { decode: { sides: { weightmap: side(52, 56.7), 'llama-bench': side(40.6, 56.7) }, ratios: { 'weightmap / llama-bench': { median: 1.28, min: 1.26, max: 1.3 } } } },
        }],
      },
    };
    const lines = render([report], HERE).split('\n');
    expect(lines).toContain('`node scripts/bench/peers.js --only decoder --quick` — 2026-11-27, AMD EPYC, family 26, model 2, 2 logical CPUs, load 1.2');
    expect(lines).toContain('| Qwen3-0.6B Q8_0 | 1 | decode | 52.0 [51.0–53.0] | 40.6 [39.6–41.6] | 1.28× [1.26–1.30] | 56.7 | 92% / 72% | 1.3 [1.2–1.4] |');
  });

  test('input with no report in it is an error', () => {
    expect(() => render([{ something: 'else' }], HERE)).toThrow(/no report found/);
  });
});
