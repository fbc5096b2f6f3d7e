/**
 * sepweight trees whose .npy matrices are stored in Fortran order (`fortran_order: True`, as numpy
 * writes transposed arrays) run on the decoder engine: the engine transposes them once at load
 * (counted in loadInfo.converted / copiedBytes). A Fortran-order f16 tree must give exactly the
 * logits and greedy tokens of the C-order tree holding the same values, in every weight mode.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DecoderEngine } from '../../lib/engines/decoder';
import { readWeights, writeWeights } from '../../lib/formats';
import { closeWeights, type ModelWeights } from '../../lib/addon/weights';
import { greedy } from '../engines/decoder-helpers';
import { fixture, tempDir } from '../helpers/fixtures';

const tmp = tempDir('weightmap-fortran-');
let cOrder: ModelWeights;
let fortran: ModelWeights;

/**
 * Rewrites a C-order .npy matrix as numpy saves its transpose's transpose: the same array in
 * Fortran order (header flag True, elements column by column). Vectors are left alone.
 */
function toFortranOrder(file: string): boolean {
  const b = fs.readFileSync(file);
  const headerLength = b.readUInt16LE(8);
  const header = b.toString('latin1', 10, 10 + headerLength);
  const shape = /'shape': \((\d+), (\d+)\)/.exec(header);
  if (!shape) return false;
  const [rows, cols] = [Number(shape[1]), Number(shape[2])];
  const size = header.includes("'<f2'") ? 2 : 4;
  // 'False' -> 'True' is one character shorter: one more space of padding keeps the length.
  const flagged = header.replace("'fortran_order': False", "'fortran_order': True").replace(/\n$/, ' \n');
  const data = b.subarray(10 + headerLength);
  const out = Buffer.alloc(data.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) data.copy(out, (c * rows + r) * size, (r * cols + c) * size, (r * cols + c + 1) * size);
  fs.writeFileSync(file, Buffer.concat([b.subarray(0, 10), Buffer.from(flagged, 'latin1'), out]));
  return true;
}

beforeAll(async () => {
  const source = await readWeights(fixture('llama-stories260k', 'sepweight'));
  const cDir = path.join(tmp.dir, 'c-order');
  const fDir = path.join(tmp.dir, 'fortran');
  await writeWeights(source, cDir, { format: 'sepweight', dtype: 'f16' });
  closeWeights(source);
  fs.cpSync(cDir, fDir, { recursive: true });
  let rewritten = 0;
  for (const f of fs.readdirSync(fDir, { recursive: true }) as string[]) if (f.endsWith('.npy') && toFortranOrder(path.join(fDir, f))) rewritten++;
  expect(rewritten).toBe(2 + 5 * 7); // embedding, lm_head, and 7 matrices per layer
  cOrder = await readWeights(cDir);
  fortran = await readWeights(fDir);
});
afterAll(() => {
  closeWeights(cOrder);
  closeWeights(fortran);
  tmp.cleanup();
});

test('the Fortran-order tree reads as transposed views of the same f16 values', () => {
  const matrices = fortran.tensors.filter((t) => t.shape.length === 2);
  expect(matrices.length).toBe(2 + 5 * 7);
  expect(matrices.every((t) => t.transposed === true && t.dtype === 'f16')).toBe(true);
  expect(cOrder.tensors.some((t) => t.transposed)).toBe(false);
});

describe.each(['none', 'q8_0', 'f32'] as const)("quant '%s'", (quant) => {
  test('logits of every position and 24 greedy tokens equal the C-order tree', async () => {
    const prompt = [1, 403, 407, 261, 378, 488, 285, 300];
    const run = async (weights: ModelWeights) => {
      const engine = await DecoderEngine.load(weights, { threads: 2, quant });
      const session = engine.createSession({ contextLength: 64 });
      const logits = await session.eval(prompt, { allLogits: true });
      const tokens = (await greedy(engine.createSession({ contextLength: 64 }), prompt, 24)).tokens;
      const info = engine.loadInfo;
      engine.dispose();
      return { logits, tokens, info };
    };
    const c = await run(cOrder);
    const f = await run(fortran);
    expect(f.tokens).toEqual(c.tokens);
    expect(Buffer.from(f.logits.buffer).equals(Buffer.from(c.logits.buffer))).toBe(true);
    // Each of the 37 matrices was transposed once (the tied lm_head file is not read).
    expect(f.info.converted - c.info.converted).toBe(1 + 5 * 7);
  });
});
