/**
 * A decoder engine loaded over a file already in the page cache maps its weights into the
 * process's page tables during the load (mmap/mapping.h Prefault), so that the first token takes
 * no page faults: before the load only the header pages the reader touched are mapped, after it
 * nearly the whole file, with no eval in between. Read from /proc/self/smaps (the resident size of
 * this process's mappings of the file); Linux only.
 */
import * as fs from 'node:fs';
import { DecoderEngine } from '../../lib/engines/decoder';
import { readWeights } from '../../lib/formats';
import { closeWeights } from '../../lib/addon/weights';
import { fixture } from '../helpers/fixtures';

const FILE = fixture('ajc1-qwen3-tiny', 'model.bin');

/** Bytes of `file` mapped into this process's page tables (the Rss of its mappings in /proc/self/smaps). */
function mappedBytes(file: string): number {
  const real = fs.realpathSync(file);
  let inFile = false;
  let kb = 0;
  for (const line of fs.readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) inFile = line.trimEnd().endsWith(` ${real}`);
    else if (inFile && line.startsWith('Rss:')) kb += Number(line.split(/\s+/)[1]);
  }
  return kb * 1024;
}

const linux = process.platform === 'linux' ? describe : describe.skip;

linux('decoder load over a file in the page cache', () => {
  test('maps the weights during the load, not at the first token', async () => {
    fs.readFileSync(FILE); // in the page cache
    const size = fs.statSync(FILE).size;
    const weights = await readWeights(FILE, { vocabulary: false });
    try {
      expect(mappedBytes(FILE)).toBeLessThan(size / 2);
      const engine = await DecoderEngine.load(weights, { threads: 1 });
      try {
        expect(mappedBytes(FILE)).toBeGreaterThan(size * 0.9);
      } finally {
        engine.dispose();
      }
    } finally {
      closeWeights(weights);
    }
  });
});
