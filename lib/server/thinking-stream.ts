/**
 * Splits a streamed Qwen3-style reply into its thinking (`<think>…</think>`, first) and its answer,
 * as lib/generation/chat.ts splitThinking does for a whole reply: text that might still turn into a tag is held
 * back until it is known not to.
 */
const OPEN = '<think>';
const CLOSE = '</think>';

export interface ThinkingPiece {
  reasoning: string;
  content: string;
}

export class ThinkingSplitter {
  private mode: 'start' | 'reasoning' | 'content' = 'start';
  private held = '';
  /** Leading newlines of the thinking (after `<think>`) and of the answer (after `</think>`) are dropped. */
  private reasoningStarted = false;
  private answerStarted = false;

  push(text: string): ThinkingPiece {
    this.held += text;
    const out: ThinkingPiece = { reasoning: '', content: '' };
    if (this.mode === 'start') {
      const lead = this.held.trimStart();
      if (lead.startsWith(OPEN)) {
        this.mode = 'reasoning';
        this.held = lead.slice(OPEN.length);
      } else if (OPEN.startsWith(lead)) {
        return out; // still possibly the opening tag
      } else {
        this.mode = 'content';
        this.answerStarted = true;
      }
    }
    if (this.mode === 'reasoning') {
      if (!this.reasoningStarted) {
        this.held = this.held.replace(/^\n+/, '');
        this.reasoningStarted = this.held !== '';
      }
      const close = this.held.indexOf(CLOSE);
      if (close < 0) {
        // Newlines just before `</think>` are not part of the thinking: hold them too.
        let end = this.held.length - heldTagPrefix(this.held, CLOSE);
        while (end > 0 && this.held[end - 1] === '\n') end--;
        out.reasoning = this.held.slice(0, end);
        this.held = this.held.slice(end);
        return out;
      }
      out.reasoning = this.held.slice(0, close).replace(/\n+$/, '');
      this.held = this.held.slice(close + CLOSE.length);
      this.mode = 'content';
    }
    out.content = this.answer();
    return out;
  }

  /** What is held back, once the reply has ended. */
  flush(): ThinkingPiece {
    const rest = this.held;
    this.held = '';
    return this.mode === 'reasoning' ? { reasoning: rest, content: '' } : { reasoning: '', content: rest };
  }

  private answer(): string {
    if (!this.answerStarted) {
      this.held = this.held.replace(/^\n+/, '');
      if (this.held === '') return '';
      this.answerStarted = true;
    }
    const text = this.held;
    this.held = '';
    return text;
  }
}

/** Length of the longest suffix of `text` that is a proper prefix of `tag`. */
function heldTagPrefix(text: string, tag: string): number {
  for (let k = Math.min(tag.length - 1, text.length); k > 0; k--) if (text.endsWith(tag.slice(0, k))) return k;
  return 0;
}
