/**
 * `weightmap serve --models DIR`: the models in a folder, each file or subfolder weightmap can
 * read, as on-demand pool entries named by their file or folder names. Each is classified from its
 * header (mapped and closed again: milliseconds, nothing read in proportion to the weights) by the
 * architecture registry: text models (loadModel), embedders (loadEmbedder) and rerankers (loadReranker) are listed; a file
 * that is no model format (a tokenizer beside a model, a README) is passed over in silence; a
 * model file that cannot be read, or one of a class the server does not serve, is reported.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { architectureOf, modelClassOf } from '../architectures';
import { detectFormat, readWeights } from '../formats';
import { closeWeights } from '../addon/weights';
import type { LoadEmbedderOptions } from '../models/embedder';
import type { LoadModelOptions } from '../models/model';
import type { LoadRerankerOptions } from '../models/reranker';
import type { ServedKind, ServedModelSpec } from './model-pool';

/** The pool kind of each model class the server serves. */
const KIND_OF_CLASS: Record<string, ServedKind> = { Model: 'text', Embedder: 'embedding', Reranker: 'rerank' };

/** What listing a models folder found: the entries, and the files passed over with why. */
export interface ModelsFolder {
  models: ServedModelSpec[];
  skipped: { path: string; reason: string }[];
}

/** Lists `dir`'s models (sorted by name); `options` are what each kind is loaded with. */
export async function listModelsFolder(dir: string, options: { text?: LoadModelOptions; embedding?: LoadEmbedderOptions; rerank?: LoadRerankerOptions } = {}): Promise<ModelsFolder> {
  const out: ModelsFolder = { models: [], skipped: [] };
  const names = fs.readdirSync(dir).filter((name) => !name.startsWith('.')).sort();
  for (const name of names) {
    const path = nodePath.join(dir, name);
    try {
      detectFormat(path);
    } catch {
      continue; // not a model file or folder
    }
    try {
      const weights = await readWeights(path);
      try {
        const entry = architectureOf(weights.config);
        const modelClass = modelClassOf(weights.config);
        const kind = modelClass ? KIND_OF_CLASS[modelClass] : undefined;
        if (entry === undefined || kind === undefined) {
          out.skipped.push({ path, reason: `a ${weights.config.architecture} model, which the server does not serve` });
          continue;
        }
        const maxSeqLen = entry.maxSeqLen(weights.config);
        const info = { format: weights.format, architecture: weights.config.architecture, contextLength: Number.isFinite(maxSeqLen) ? maxSeqLen : 0 };
        out.models.push({ id: name, path, kind, info, options: options[kind] });
      } finally {
        closeWeights(weights);
      }
    } catch (error) {
      out.skipped.push({ path, reason: (error as Error).message });
    }
  }
  return out;
}
