/**
 * `weightmap rerank MODEL QUERY [DOC ...]`: the documents ranked by a reranker (a cross-encoder, or
 * a yes/no reranker: Qwen3-Reranker), best first,
 * as JSON Lines ({"index", "score", "document"} each; index = the document's position in the
 * input). Without DOC arguments every line of stdin is one document.
 */
import * as readline from 'node:readline';
import type { Command } from 'commander';
import { EMBEDDER_QUANTS, type EmbedderQuant } from '../engines/bert';
import { loadReranker, RERANKER_KINDS, type RerankerKind, type ScoreActivation } from '../models/reranker';
import { PAIR_TRUNCATIONS, type PairTruncation } from '../tokenizers/pair';
import { choiceOption, existingPath, interruptible, intOption, threadsOption, whenInterrupted } from './run-command';

async function readLines(signal: AbortSignal): Promise<string[]> {
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  whenInterrupted(signal, () => {
    lines.close();
    process.stdin.destroy();
  });
  const out: string[] = [];
  for await (const line of lines) out.push(line);
  return out;
}

export function registerRerank(program: Command): void {
  program
    .command('rerank')
    .description('rank documents by relevance to a query with a reranker: one JSON object per line, best first')
    .argument('<model>', 'a cross-encoder (HF Bert/XLMRobertaForSequenceClassification folder or its GGUF) or Qwen3-Reranker (HF folder or GGUF)', existingPath)
    .argument('<query>', 'the query')
    .argument('[document...]', 'documents to rank (default: one per line of stdin)')
    .option('--top-n <n>', 'print the best n only', intOption(1))
    .option('--batch-size <n>', 'pairs per native batch (default 32)', intOption(1))
    .option('--threads <n>', 'encoder threads, 1 to the logical cores (default: physical cores)', threadsOption)
    .option('--quant <type>', `linear layers: ${EMBEDDER_QUANTS.join(', ')} (default f32)`, choiceOption(EMBEDDER_QUANTS))
    .option('--max-seq-length <n>', 'longest pair in tokens (default: the model\'s positions)', intOption(3))
    .option('--truncation <how>', `how a long pair is cut: ${PAIR_TRUNCATIONS.join(', ')} (default longest_first)`, choiceOption(PAIR_TRUNCATIONS))
    .option('--sigmoid', 'scores as sigmoid(logit) in 0..1 (default: the model\'s, else the raw logit; a yes/no reranker\'s: P(yes))')
    .option('--kind <kind>', `what the model is: ${RERANKER_KINDS.join(', ')} (default: what its files say)`, choiceOption(RERANKER_KINDS))
    .option('--instruction <text>', 'a yes/no reranker\'s <Instruct> (default: its model card\'s)')
    .action(
      interruptible(async (signal, model: string, query: string, documents: string[], opts: Record<string, unknown>) => {
        const reranker = await loadReranker(model, {
          threads: opts.threads as number | undefined,
          quant: opts.quant as EmbedderQuant | undefined,
          maxSeqLength: opts.maxSeqLength as number | undefined,
          truncation: opts.truncation as PairTruncation | undefined,
          ...(opts.sigmoid ? { activation: 'sigmoid' as ScoreActivation } : {}),
          ...(opts.kind ? { kind: opts.kind as RerankerKind } : {}),
          ...(opts.instruction !== undefined ? { instruction: opts.instruction as string } : {}),
        });
        try {
          const docs = documents.length > 0 ? documents : await readLines(signal);
          const ranked = await reranker.rank(query, docs, {
            topN: opts.topN as number | undefined,
            batchSize: opts.batchSize as number | undefined,
            returnDocuments: true,
            signal,
          });
          process.stdout.write(ranked.map((r) => `${JSON.stringify(r)}\n`).join(''));
        } finally {
          reranker.dispose();
        }
      }),
    );
}
