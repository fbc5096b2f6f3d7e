// Convert between formats (any reader + any writer), then inspect and run the result.
// node examples/convert.mjs [IN] [OUT]
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { convert, loadModel, readWeights, closeWeights } from 'weightmap';

const input = process.argv[2] ?? '../shared/fixtures/llama-stories260k/stories260K.bin';
const output = process.argv[3] ?? join(mkdtempSync(join(tmpdir(), 'weightmap-')), 'stories260K.q8_0.gguf');

let written = 0;
const { notes } = await convert(input, output, { to: 'gguf', quant: 'q8_0', onProgress: (p) => (written = p.bytesWritten) });
console.log(`wrote ${written} bytes to ${output}`);
for (const note of notes) console.log(note); // what the output format could not hold

const weights = await readWeights(output); // config + zero-copy tensor views
console.log(`${weights.format}, ${weights.config.architecture}, ${weights.tensors.length} tensors, first ${weights.tensors[0].name} ${weights.tensors[0].dtype}`);
closeWeights(weights);

const model = await loadModel(output, { threads: 2 }); // the GGUF carries the vocabulary
console.log(await model.generate('Once upon a time', { maxTokens: 16 }).text());
model.dispose();
