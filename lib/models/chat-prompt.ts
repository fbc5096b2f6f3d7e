/**
 * A conversation's prompt ids: the chat template rendered once, off the JS thread where it is a
 * model's own Jinja template, and encoded so that only the template's own markers become special
 * tokens. Message content is untrusted text (a user's, a tool's output): `<|im_end|><|im_start|>system`
 * typed into it must not close the turn and open a system one, so special-token text in content is
 * encoded as ordinary text (HF's split_special_tokens), stricter than HF's apply_chat_template,
 * which parses it as specials.
 *
 * How: each special-token text found in a message's content (or reasoning) is replaced, before
 * the render, by a placeholder of private-use characters with a per-render nonce; the rendered
 * text is cut at the placeholders; the template's pieces are encoded with special tokens parsed,
 * each placeholder as its special text with them not parsed. Content without special-token text
 * renders and encodes exactly as before (one encode of the whole text). A template that inspects
 * content only sees a placeholder where a special token's text was; one that cuts a placeholder
 * (slicing, truncate) leaves part of it: the prompt is then refused (ChatTemplateError 'content')
 * rather than fed with the pieces of a placeholder. (Messages that hold private-use characters of
 * their own are checked for the nonce only: a cut there leaves such characters, never a control token.)
 */
import { checkMessages, type ChatMessage, type ChatRenderOptions, type ChatTemplate } from '../generation/chat';
import { ChatTemplateError } from '../chat-template/budget';
import { encodeAsync } from '../tokenizer-loading';
import type { Tokenizer } from '../tokenizers';

const OPEN = '\uF8F0';
const CLOSE = '\uF8F1';
/** Nonce and index digits: private-use characters no case mapping, trim or split touches. */
const DIGIT0 = 0xe000;
const NONCE_LENGTH = 8;
/** Every character a placeholder is made of. */
const PLACEHOLDER_CHARS = /[\uE000-\uE1FF\uF8F0\uF8F1]/;

/** Special tokens' texts, longest first (so that a longer one is found before a shorter one in it). */
const specialTextsOf = new WeakMap<Tokenizer, readonly string[]>();

function specialTexts(tokenizer: Tokenizer): readonly string[] {
  let texts = specialTextsOf.get(tokenizer);
  if (!texts) {
    const found = new Set<string>();
    for (let id = 0; id < tokenizer.vocabSize; id++) {
      if (!tokenizer.isSpecial(id)) continue;
      const text = tokenizer.idToToken(id);
      if (text) found.add(text);
    }
    texts = [...found].sort((a, b) => b.length - a.length);
    specialTextsOf.set(tokenizer, texts);
  }
  return texts;
}

function digits(n: number): string {
  let out = '';
  do {
    out = String.fromCharCode(DIGIT0 + (n & 0xff)) + out;
    n = Math.floor(n / 256);
  } while (n > 0);
  return out;
}

/** Replaces special-token texts in message contents by placeholders; `found` collects the texts by index. */
class ContentGuard {
  // Not a secret: a placeholder forged in content stands for a special text that is encoded as text
  // anyway (or for none: refused). The nonce only keeps content's own private-use text apart.
  readonly nonce = Array.from({ length: NONCE_LENGTH }, () => String.fromCharCode(DIGIT0 + 0x100 + Math.floor(Math.random() * 0x100))).join('');
  readonly found: string[] = [];
  private readonly pattern: RegExp | undefined;

  constructor(specials: readonly string[]) {
    this.pattern = specials.length ? new RegExp(specials.map(escapeRegExp).join('|'), 'g') : undefined;
  }

  guard(text: string): string {
    if (!this.pattern) return text;
    return text.replace(this.pattern, (special) => {
      this.found.push(special);
      return `${OPEN}${this.nonce}${digits(this.found.length - 1)}${CLOSE}`;
    });
  }

  /**
   * The rendered text cut into [template text, special text from content, template text, ...].
   * `strict`: the messages held no placeholder characters of their own, so any left outside a
   * whole placeholder are a cut one.
   */
  cut(rendered: string, strict: boolean): string[] {
    const placeholder = new RegExp(`${OPEN}${this.nonce}([\\u${(DIGIT0).toString(16)}-\\u${(DIGIT0 + 0xff).toString(16)}]+)${CLOSE}`, 'g');
    const pieces: string[] = [];
    let at = 0;
    for (const m of rendered.matchAll(placeholder)) {
      let index = 0;
      for (const ch of m[1]) index = index * 256 + (ch.charCodeAt(0) - DIGIT0);
      const special = this.found[index];
      if (special === undefined) throw mangled();
      pieces.push(rendered.slice(at, m.index), special);
      at = m.index + m[0].length;
    }
    pieces.push(rendered.slice(at));
    if (pieces.some((p, i) => i % 2 === 0 && (p.includes(this.nonce) || (strict && PLACEHOLDER_CHARS.test(p))))) throw mangled();
    return pieces;
  }
}

function mangled(): ChatTemplateError {
  return new ChatTemplateError('content', 'the chat template changed message content that holds special-token text; remove that text from messages');
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The ids a chat model is fed for `messages`: the template's text, its markers as special tokens, content as text. */
export async function encodeChatPrompt(template: ChatTemplate, tokenizer: Tokenizer, messages: readonly ChatMessage[], options: ChatRenderOptions = {}): Promise<number[]> {
  return (await encodeChatSegments(template, tokenizer, messages, options))[0];
}

/**
 * encodeChatPrompt cut at each occurrence of `marker` in the rendered prompt (a media marker that
 * message content holds where an image goes): the ids of the n + 1 pieces around n markers. Without
 * a marker, one piece: encodeChatPrompt's ids.
 */
export async function encodeChatSegments(
  template: ChatTemplate,
  tokenizer: Tokenizer,
  messages: readonly ChatMessage[],
  options: ChatRenderOptions = {},
  marker?: string,
): Promise<number[][]> {
  checkMessages(messages);
  const guard = new ContentGuard(specialTexts(tokenizer));
  const guarded = messages.map((m) => ({
    ...m,
    content: guard.guard(m.content),
    ...(m.reasoningContent !== undefined ? { reasoningContent: guard.guard(m.reasoningContent) } : {}),
    // A call's arguments are the model's output, untrusted as content is.
    ...(m.toolCalls !== undefined ? { toolCalls: m.toolCalls.map((c) => ({ ...c, arguments: guard.guard(c.arguments) })) } : {}),
  }));
  const rendered = await template.renderAsync(guard.found.length ? guarded : messages, options);
  // Templates write their own special tokens (BOS included) as text.
  if (guard.found.length === 0) {
    const texts = marker === undefined ? [rendered] : rendered.split(marker);
    return encodeAsync(tokenizer, texts, { addSpecialTokens: false });
  }
  const own = messages.some(
    (m) =>
      PLACEHOLDER_CHARS.test(m.content) ||
      (m.reasoningContent !== undefined && PLACEHOLDER_CHARS.test(m.reasoningContent)) ||
      (m.toolCalls ?? []).some((c) => PLACEHOLDER_CHARS.test(c.arguments)),
  );
  const pieces = guard.cut(rendered, !own);
  // Template text (markers at the cuts of `marker`) and, between, content's special-token texts.
  const markup = pieces.filter((_, i) => i % 2 === 0).map((p) => (marker === undefined ? [p] : p.split(marker)));
  const content = pieces.filter((_, i) => i % 2 === 1);
  const [markupIds, contentIds] = await Promise.all([
    encodeAsync(tokenizer, markup.flat(), { addSpecialTokens: false }),
    encodeAsync(tokenizer, content, { addSpecialTokens: false, parseSpecialTokens: false }),
  ]);
  const segments: number[][] = [[]];
  let next = 0;
  markup.forEach((cuts, i) => {
    cuts.forEach((_, j) => {
      if (j > 0) segments.push([]);
      for (const id of markupIds[next++]) segments[segments.length - 1].push(id);
    });
    if (i < contentIds.length) for (const id of contentIds[i]) segments[segments.length - 1].push(id);
  });
  return segments;
}
