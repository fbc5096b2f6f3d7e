/** The parts of a sepweight tree a pipeline stage or coordinator maps. */
import { readWeights } from '../formats';
import { closeWeights, type ModelWeights } from '../addon/weights';
import { sepweightParts, type LayerRange } from './layers';

/**
 * Only the folders of `range`: start/ with layer 0, mid/<i>/ of its layers, end/ with the last
 * layer. The first read (the range alone) learns the layer count from config.json.
 */
export async function readStageWeights(dir: string, range: LayerRange): Promise<ModelWeights> {
  const layersOnly = `${range.first}-${range.last + 1}`;
  const probe = await readWeights(dir, { format: 'sepweight', parts: layersOnly });
  const numLayers = (probe.config as { numLayers?: number }).numLayers ?? 0;
  const parts = sepweightParts(range, numLayers);
  if (parts === layersOnly) return probe;
  closeWeights(probe);
  return readWeights(dir, { format: 'sepweight', parts });
}

/** What a coordinator reads: the config and tokenizer, with layer 0 mapped (never read). */
export const COORDINATOR_READ = { format: 'sepweight', parts: '0-1' } as const;
