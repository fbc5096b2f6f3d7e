/** The messages between render-client.ts and render-worker.ts. */
import type { SentTemplateError, TemplateBudget } from './budget';

export interface RenderRequest {
  id: number;
  source: string;
  context: Record<string, unknown>;
  budget: TemplateBudget;
}

/** A render's reply; the worker first sends 'ready' once it has loaded. */
export type RenderReply = { id: number; text: string } | { id: number; error: SentTemplateError };
