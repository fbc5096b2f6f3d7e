// Sentence embeddings (L2-normalized) and their cosine similarity.
// node examples/embed.mjs [MODEL]   (an EMBD file or a sentence-transformers folder)
import { loadEmbedder, similarity } from 'weightmap';

const path = process.argv[2] ?? '../shared/fixtures/embd-minilm-tiny/model.weights';
const embedder = await loadEmbedder(path, { threads: 2 });
const [a, b] = await embedder.embed(['Hello, world!', 'The quick brown fox jumps over the lazy dog.']);
console.log(`dimensions: ${a.length}, cosine: ${similarity(a, b).toFixed(4)}`);

const fast = await loadEmbedder(path, { quant: 'int8' }); // faster, approximate
const [c] = await fast.embed(['Hello, world!']);
console.log(`int8 vs f32 cosine: ${similarity(a, c).toFixed(4)}`);
embedder.dispose();
fast.dispose();
