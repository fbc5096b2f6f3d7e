/**
 * A language model with an mmproj's vision encoder (loadModel(lm, { mmproj })): chat messages
 * whose content holds images as well as text.
 *
 *   const model = await loadModel('gemma-3-4b-it-Q4_K_M.gguf', { mmproj: 'mmproj-gemma-3-4b-it-f16.gguf' });
 *   const reply = await model.chat([{ role: 'user', content: [{ type: 'image', image: 'cat.png' }, { type: 'text', text: 'What is this?' }] }]).text();
 *
 * As llama.cpp's mtmd does: each image part becomes a media marker in the message's text, the chat
 * template renders the conversation, and at each marker the model reads the projector's layout
 * (lib/models/image-plan.ts): its texts and, between them, the embedding rows of the image (or of
 * its tiles and overview: SmolVLM), encoded off the JS thread, once per picture while the model
 * lives (cached by a hash of its pixels, the last few kept); the rows attend to each other where
 * the layout says (Gemma 3). A reply with images runs in a session of its own (disposed when it ends).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { ChatMessage, ChatRenderOptions } from '../generation/chat';
import { deferredGeneration } from '../generation/deferred-generation';
import { startGeneration, type Generation, type LanguageSession } from '../generation/generate';
import { rangeError, UnsupportedError } from '../base/errors';
import { closeWeights, type ModelWeights } from '../addon/weights';
import type { VisionEngine } from '../engines/vision';
import { CLIP_PROJECTORS, type ClipConfig } from '../architectures/clip';
import { encodeChatSegments } from './chat-prompt';
import type { ChatOptions } from './chat-session';
import { imageToRgb, type ImageInput } from './image';
import { ImagePlanner, type ImagePlan } from './image-plan';
import { Model, type ChatPrompt } from './language-model';

/** A part of a chat message's content. */
export type ChatContentPart = { type: 'text'; text: string } | { type: 'image'; image: ImageInput };

/** A chat message whose content may hold images (parts in order). */
export interface VisionChatMessage extends Omit<ChatMessage, 'content'> {
  content: string | readonly ChatContentPart[];
}

/** A media marker for one render: private-use characters around a random nonce, which message text does not hold. */
function mediaMarker(): string {
  return `\uF8F2${randomBytes(8).toString('hex')}\uF8F3`;
}

/** The rendered prompt's pieces around its media markers: one more than the images, or the template dropped or repeated one. */
function checkedSegments(segments: number[][], images: number): number[][] {
  if (segments.length !== images + 1) throw new UnsupportedError(`chat: the chat template dropped or repeated an image (${images} images, ${segments.length - 1} markers rendered)`);
  return segments;
}

/** Images' embeddings kept per model (by pixel hash). */
const CACHED_IMAGES = 8;

type ModelRest = ConstructorParameters<typeof Model> extends [unknown, ...infer R] ? R : never;

export class VisionModel extends Model {
  private readonly encoded = new Map<string, Promise<Float32Array>>();
  private planner: ImagePlanner | undefined;

  constructor(
    engine: ConstructorParameters<typeof Model>[0],
    /** The mmproj's engine, and its weights (closed with the model). */
    private readonly vision: VisionEngine,
    private readonly visionWeights: ModelWeights,
    ...rest: ModelRest
  ) {
    super(engine, ...rest);
  }

  /** The mmproj's config: its encoder, projector type and image size. */
  get visionConfig(): ClipConfig {
    return this.vision.config;
  }

  /** The image embeddings [imageTokens, hidden] of `image` (decoded and resized to the encoder's size when it is not raw RGB at it). */
  async encodeImage(image: ImageInput, options: { signal?: AbortSignal } = {}): Promise<Float32Array> {
    this.live();
    return this.encodeRgb(await imageToRgb(image, this.vision.config.imageSize, CLIP_PROJECTORS[this.vision.config.projectorType].resize), options.signal);
  }

  /** The image embeddings of RGB at the encoder's size, cached by its pixels. */
  private encodeRgb(rgb: Uint8Array, signal: AbortSignal | undefined): Promise<Float32Array> {
    const key = createHash('sha256').update(rgb).digest('hex');
    let rows = this.encoded.get(key);
    if (!rows) {
      rows = this.vision.encodeRgb(rgb, { signal }).then((r) => r.embeddings);
      rows.catch(() => this.encoded.delete(key));
      this.encoded.set(key, rows);
      if (this.encoded.size > CACHED_IMAGES) this.encoded.delete(this.encoded.keys().next().value!);
    } else {
      // most recently used last
      this.encoded.delete(key);
      this.encoded.set(key, rows);
    }
    return rows;
  }

  /** Model.chat, with image parts in message content. */
  override chat(messages: readonly VisionChatMessage[] | readonly ChatMessage[] | ChatPrompt, options: ChatOptions = {}): Generation {
    const list = messages as readonly VisionChatMessage[];
    if (!Array.isArray(messages) || !list.some((m) => typeof m?.content !== 'string')) return super.chat(messages as readonly ChatMessage[] | ChatPrompt, options);
    this.live();
    if (options.tools !== undefined || options.jsonSchema !== undefined) throw new UnsupportedError('chat with images: tools and jsonSchema are not supported yet');
    const marker = mediaMarker();
    const { flat, images } = this.withMarkers(list, marker);
    const template = this.template();
    const { stopTokens, stop } = this.chatStops(template, options);
    let session: LanguageSession | undefined;
    const prepared = this.prefilled(flat, images, options, marker).then(({ session: made, ids }) => {
      session = made;
      return ids;
    });
    return deferredGeneration(prepared, (ids) => {
      const host = { ...this.host(), acquire: () => ({ session: session!, release: () => session!.dispose() }) };
      try {
        return startGeneration(host, ids, { ...options, stopTokens, stop });
      } catch (error) {
        session!.dispose();
        throw error;
      }
    });
  }

  /** The logits [V] after a conversation with images (chat()'s prompt: the template's generation prompt included unless options say otherwise). */
  async chatLogits(messages: readonly VisionChatMessage[], options: ChatRenderOptions & { signal?: AbortSignal } = {}): Promise<Float32Array> {
    this.live();
    const marker = mediaMarker();
    const { flat, images } = this.withMarkers(messages, marker);
    const { session, ids } = await this.prefilled(flat, images, options, marker);
    try {
      return await session.eval(ids.slice(-1), { signal: options.signal });
    } finally {
      session.dispose();
    }
  }

  /** Messages with each image part replaced by `marker` in the text, and the images in order. */
  private withMarkers(messages: readonly VisionChatMessage[], marker: string): { flat: ChatMessage[]; images: ImageInput[] } {
    const images: ImageInput[] = [];
    const flat: ChatMessage[] = messages.map((m) => {
      if (typeof m.content === 'string') return m as ChatMessage;
      if (!Array.isArray(m.content)) throw new TypeError('chat: message content must be a string or an array of parts');
      let text = '';
      for (const part of m.content as readonly ChatContentPart[]) {
        if (part?.type === 'text' && typeof part.text === 'string') text += part.text;
        else if (part?.type === 'image') {
          images.push(part.image);
          text += marker;
        } else throw new TypeError("chat: a content part is { type: 'text', text } or { type: 'image', image }");
      }
      return { ...m, content: text };
    });
    return { flat, images };
  }

  /**
   * The positions chat(messages) fills before it generates: the rendered conversation's tokens and,
   * per image, the layout's texts and rows (the images are not encoded; a tiled layout decodes
   * them for their size).
   */
  async chatPromptTokens(messages: readonly VisionChatMessage[], options: ChatRenderOptions = {}): Promise<number> {
    this.live();
    const marker = mediaMarker();
    const { flat, images } = this.withMarkers(messages, marker);
    const segments = checkedSegments(await encodeChatSegments(this.template(), this.tokenizer, flat, options, marker), images.length);
    const plans = await Promise.all(images.map((image) => this.imagePlanner().plan(image)));
    return this.positions(segments, plans);
  }

  private imagePlanner(): ImagePlanner {
    this.planner ??= new ImagePlanner(this.vision.config, this.vision.imageLayout, this.tokenizer);
    return this.planner;
  }

  private positions(segments: number[][], plans: ImagePlan[]): number {
    const tokens = this.vision.imageTokens;
    return segments.reduce((n, s) => n + s.length, 0) + plans.reduce((n, p) => n + ImagePlanner.positions(p, tokens), 0);
  }

  /** A session of its own holding the conversation's prompt but its last token (disposed on failure), and the prompt's ids. */
  private async prefilled(flat: ChatMessage[], images: ImageInput[], options: ChatRenderOptions & { signal?: AbortSignal }, marker: string): Promise<{ session: LanguageSession; ids: number[] }> {
    const segments = checkedSegments(await encodeChatSegments(this.template(), this.tokenizer, flat, options, marker), images.length);
    const plans = await Promise.all(images.map((image) => this.imagePlanner().plan(image)));
    // Checked before any picture is encoded.
    const total = this.positions(segments, plans);
    const pictures = plans.reduce((n, p) => n + p.filter((x) => !Array.isArray(x)).length, 0);
    if (total > this.contextLength) throw rangeError(`chat: the prompt needs ${total} positions (${images.length} images, ${pictures} pictures of ${this.vision.imageTokens}), more than the context length ${this.contextLength}`);
    const embeddings = await Promise.all(plans.map((plan) => Promise.all(plan.filter((x) => !Array.isArray(x)).map(async (p) => this.encodeRgb(await (p as { rgb(): Promise<Uint8Array> }).rgb(), options.signal)))));
    const session = this.engine.createSession(this.contextLength);
    try {
      return { session, ids: await this.prefill(session, segments, plans, embeddings, options.signal) };
    } catch (error) {
      session.dispose();
      throw error;
    }
  }

  /**
   * Feeds the prompt but its last token into `session`: text segments as ids and, per image, its
   * plan: ids, and each picture's rows (named by the id before them). The prompt's ids, image
   * positions included, for startGeneration (which feeds the last one).
   */
  private async prefill(session: LanguageSession, segments: number[][], plans: ImagePlan[], embeddings: Float32Array[][], signal: AbortSignal | undefined): Promise<number[]> {
    if (!session.evalRows) throw new UnsupportedError(`${this.info.path}: its engine takes no image rows`);
    const bidirectional = this.vision.imageLayout.bidirectional;
    const tokens = this.vision.imageTokens;
    const ids: number[] = [];
    let pending: number[] = [];
    for (let i = 0; i < segments.length; i++) {
      pending.push(...segments[i]);
      if (i === plans.length) break;
      let picture = 0;
      for (const piece of plans[i]) {
        if (Array.isArray(piece)) {
          pending.push(...piece);
          continue;
        }
        const name = pending.length > 0 ? pending[pending.length - 1] : ids[ids.length - 1];
        if (pending.length > 0) await session.eval(pending, { signal });
        ids.push(...pending);
        const named = new Array<number>(tokens).fill(name);
        await session.evalRows(embeddings[i][picture++], { ids: named, bidirectional, logits: 'none', signal });
        ids.push(...named);
        pending = [];
      }
    }
    if (pending.length > 1) await session.eval(pending.slice(0, -1), { signal });
    ids.push(...pending);
    return ids;
  }

  override dispose(): void {
    if (this.disposed) return;
    this.vision.dispose();
    closeWeights(this.visionWeights);
    super.dispose();
  }
}
