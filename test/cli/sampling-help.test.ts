/**
 * The sampling defaults have one source, lib/generation/sampling.ts SAMPLING_DEFAULTS: `weightmap generate
 * --help` prints those numbers, and resolveSampling hands the native sampler every one of them.
 */
import { resolveSampling, SAMPLING_DEFAULTS } from '../../lib/generation/sampling';
import { runCli } from '../helpers/cli';

const FLAGS: [string, keyof typeof SAMPLING_DEFAULTS][] = [
  ['--temperature <t>', 'temperature'],
  ['--top-k <k>', 'topK'],
  ['--top-p <p>', 'topP'],
  ['--min-p <p>', 'minP'],
  ['--repeat-penalty <r>', 'repeatPenalty'],
  ['--frequency-penalty <f>', 'frequencyPenalty'],
  ['--presence-penalty <p>', 'presencePenalty'],
  ['--penalty-last-n <n>', 'penaltyLastN'],
];

test('generate --help shows the defaults of lib/generation/sampling.ts, and the native sampler is given each of them', async () => {
  const r = await runCli(['generate', '--help']);
  expect(r.exitCode).toBe(0);
  // Commander wraps long descriptions: compare on one line.
  const help = r.stdout.replace(/\s+/g, ' ');
  const native = resolveSampling({}).params;
  for (const [flag, key] of FLAGS) {
    const shown = new RegExp(`${flag.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} .*?\\(default (-?[0-9.]+)`).exec(help);
    expect([flag, shown ? Number(shown[1]) : 'absent']).toEqual([flag, SAMPLING_DEFAULTS[key]]);
    expect([key, native[key]]).toEqual([key, SAMPLING_DEFAULTS[key]]);
  }
  // The user-facing figures (node-llama-cpp's), against which the source itself is checked.
  expect([SAMPLING_DEFAULTS.topK, SAMPLING_DEFAULTS.topP, SAMPLING_DEFAULTS.penaltyLastN]).toEqual([40, 0.95, 64]);
});
