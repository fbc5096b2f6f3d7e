/** The speculative-decoding flags of generate, chat and serve (GenerateOptions.speculative). */
import type { Command } from 'commander';
import type { SpeculativeOptions } from '../generation/speculative';
import { MAX_DRAFT_TOKENS } from '../generation/speculative';
import { loadModel, type LoadModelOptions, type Model } from '../models/model';
import { existingPath, intOption } from './run-command';

export function addSpeculativeOptions(command: Command): Command {
  return command
    .option('--speculative', 'speculative decoding by prompt lookup: tokens that followed an earlier occurrence of the last few tokens are verified several per forward pass (same greedy output)')
    .option('--draft-model <model>', 'speculative decoding with a smaller model of the same vocabulary guessing the next tokens (greedy)', existingPath)
    .option('--draft-tokens <n>', `most tokens guessed per forward pass (default 8 for prompt lookup, 4 for a draft model; at most ${MAX_DRAFT_TOKENS})`, intOption(1, MAX_DRAFT_TOKENS));
}

/** The flags' SpeculativeOptions (undefined: off) and the draft model they loaded (the caller disposes it). */
export async function speculativeOptions(opts: Record<string, unknown>, load: LoadModelOptions): Promise<{ speculative?: SpeculativeOptions; draftModel?: Model }> {
  const maxDraftTokens = opts.draftTokens as number | undefined;
  const tokens = maxDraftTokens !== undefined ? { maxDraftTokens } : {};
  if (opts.draftModel !== undefined) {
    const { threads, contextLength } = load;
    const draftModel = await loadModel(opts.draftModel as string, { ...(threads !== undefined ? { threads } : {}), ...(contextLength !== undefined ? { contextLength } : {}) });
    return { speculative: { draft: draftModel, ...tokens }, draftModel };
  }
  if (opts.speculative === true || maxDraftTokens !== undefined) return { speculative: { draft: 'prompt-lookup', ...tokens } };
  return {};
}
