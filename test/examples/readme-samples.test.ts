/**
 * README.md's code samples are the files in examples/ (which examples.test.ts runs), included
 * verbatim after an `<!-- example: examples/NAME.mjs -->` line; scripts/sync-readme-examples.js
 * rewrites them from the files. No other JavaScript or TypeScript block may appear in README.md,
 * so every sample a reader copies from it is one the suite runs.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { synced } = require('../../scripts/sync-readme-examples.js') as { synced: (readme: string) => { text: string; stale: string[] } };

const root = path.join(__dirname, '..', '..');
const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');

describe('README.md', () => {
  test('each sample block is its example file, verbatim', () => {
    expect(synced(readme).stale).toEqual([]);
  });

  test('every js/ts block is an included example, and every example is included', () => {
    const lines = readme.split('\n');
    const included: string[] = [];
    lines.forEach((line, i) => {
      if (/^```(js|mjs|ts|javascript|typescript)\b/.test(line)) {
        const marker = /^<!-- example: (examples\/[\w.-]+\.mjs) -->$/.exec(lines[i - 1] ?? '');
        expect({ line: i + 1, marker: marker ? 'present' : lines[i - 1] }).toEqual({ line: i + 1, marker: 'present' });
        included.push(marker![1]);
      }
    });
    const examples = fs.readdirSync(path.join(root, 'examples')).filter((f) => f.endsWith('.mjs')).map((f) => `examples/${f}`);
    expect(included.sort()).toEqual(examples.sort());
  });

  test('opens with the two commands that install, generate and test', () => {
    const start = readme.indexOf('```sh\n') + '```sh\n'.length;
    expect(readme.slice(start, readme.indexOf('\n```', start)).split('\n')).toEqual([
      'npm ci && node dist/cjs/cli/main.js generate ../shared/fixtures/llama-stories260k/stories260K.bin "Once upon a time" --tokenizer ../shared/fixtures/llama-stories260k/tok512.bin --max-tokens 64',
      'npm test',
    ]);
  });

  test('stays a user guide: under 500 lines, no issue numbers or commit hashes', () => {
    expect(readme.split('\n').length).toBeLessThan(500);
    expect(readme.match(/(^|[\s(])#\d+\b/gm) ?? []).toEqual([]);
    expect(readme.match(/\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b/g) ?? []).toEqual([]);
  });
});
