// Rank documents by relevance to a query with a cross-encoder (raw logits, best first).
// node examples/rerank.mjs MODEL   (e.g. cross-encoder/ms-marco-MiniLM-L-6-v2: an HF folder or its GGUF)
import { loadReranker } from 'weightmap';

const reranker = await loadReranker(process.argv[2], { threads: 2 });
const documents = ['Berlin is the capital of Germany.', 'Bananas are yellow.', 'Germany has 84 million people.'];
const ranked = await reranker.rank('What is the capital of Germany?', documents, { topN: 2, returnDocuments: true });
for (const { index, score, document } of ranked) console.log(`${index} ${score.toFixed(4)} ${document}`);
reranker.dispose();
