/**
 * What a language model reads for one image, from its projector's layout (lib/architectures/clip
 * ImageLayout) as llama.cpp's mtmd lays it out: token ids, and pictures at the encoder's size whose
 * rows go between them. A `single` layout's picture is the image itself, resized, read only when
 * its rows are needed; an `idefics3-tiles` layout decodes the image for its size, to cut it (off
 * the JS thread: tiles-client.ts).
 */
import { UnsupportedError } from '../base/errors';
import { CLIP_PROJECTORS, type ClipConfig, type ImageLayout } from '../architectures/clip';
import type { Tokenizer } from '../tokenizers';
import { encodeAsync } from '../tokenizer-loading';
import { decodeRgb, imageToRgb, type ImageInput } from './image';
import { idefics3TilesInWorker } from './tiles-client';

/** A picture at the encoder's size (RGB [imageSize, imageSize, 3]), produced when its rows are encoded. */
export interface Picture {
  rgb(): Promise<Uint8Array>;
}

/** One image's positions in order: ids, and pictures (imageTokens rows each). */
export type ImagePlan = (number[] | Picture)[];

export class ImagePlanner {
  private pieceIds: Promise<Map<string, number>> | undefined;
  private singleIds: Promise<[number[], number[]]> | undefined;

  constructor(
    private readonly config: ClipConfig,
    private readonly layout: ImageLayout,
    private readonly tokenizer: Tokenizer,
  ) {}

  /** Positions `plan` fills, given `imageTokens` rows per picture. */
  static positions(plan: ImagePlan, imageTokens: number): number {
    return plan.reduce((n, p) => n + (Array.isArray(p) ? p.length : imageTokens), 0);
  }

  async plan(image: ImageInput): Promise<ImagePlan> {
    const layout = this.layout;
    if (layout.kind === 'single') {
      const [begin, end] = await this.single(layout);
      const c = this.config;
      return [begin, { rgb: () => imageToRgb(image, c.imageSize, CLIP_PROJECTORS[c.projectorType].resize) }, end];
    }
    const longest = this.config.preprocImageSize;
    if (longest === undefined) throw new UnsupportedError(`chat with a ${CLIP_PROJECTORS[this.config.projectorType].title} mmproj without 'clip.vision.preproc_image_size' (an older converter's file): its image split is not implemented`);
    const [rowEnd, overviewBegin, overviewEnd] = await Promise.all([layout.rowEnd, layout.overviewBegin, layout.overviewEnd].map((texts) => this.lookupAll(texts)));
    const { data, width, height } = await decodeRgb(image);
    const split = await idefics3TilesInWorker(data, width, height, this.config.imageSize, longest);
    const texts: string[] = [];
    for (let y = 1; y <= split.rows; y++) for (let x = 1; x <= split.columns; x++) texts.push(layout.tileBegin(y, x));
    const begins = await encodeAsync(this.tokenizer, texts, { addSpecialTokens: false });
    const plan: ImagePlan = [];
    for (let y = 0; y < split.rows; y++) {
      for (let x = 0; x < split.columns; x++) {
        const tile = split.tiles[y * split.columns + x];
        plan.push(begins[y * split.columns + x], { rgb: async () => tile });
      }
      if (y !== split.rows - 1) plan.push(rowEnd);
    }
    plan.push(overviewBegin, { rgb: async () => split.overview }, overviewEnd);
    return plan;
  }

  private single(layout: { begin: string; end: string }): Promise<[number[], number[]]> {
    this.singleIds ??= encodeAsync(this.tokenizer, [layout.begin, layout.end], { addSpecialTokens: false }).then(([begin, end]) => {
      if (begin.length === 0 || end.length === 0) throw new UnsupportedError(`the vocabulary has no '${layout.begin}' / '${layout.end}' for the image layout`);
      return [begin, end] as [number[], number[]];
    });
    this.singleIds.catch(() => (this.singleIds = undefined));
    return this.singleIds;
  }

  /** The layout's vocabulary pieces by text, found in one pass over the vocabulary. */
  private lookupAll(texts: string[]): Promise<number[]> {
    this.pieceIds ??= Promise.resolve().then(() => this.findPieces());
    return this.pieceIds.then((ids) =>
      texts.map((t) => {
        const id = ids.get(t);
        if (id === undefined) throw new UnsupportedError(`the vocabulary has no token '${JSON.stringify(t).slice(1, -1)}' for the image layout`);
        return id;
      }),
    );
  }

  /** Each piece's first id whose text (special tokens as written) it is, as mtmd's lookup_token finds it. */
  private findPieces(): Map<string, number> {
    const layout = this.layout;
    const found = new Map<string, number>();
    if (layout.kind !== 'idefics3-tiles') return found;
    const wanted = new Set([...layout.rowEnd, ...layout.overviewBegin, ...layout.overviewEnd]);
    for (let i = 0; i < this.tokenizer.vocabSize && found.size < wanted.size; i++) {
      const text = this.tokenizer.decode([i]);
      if (wanted.has(text) && !found.has(text)) found.set(text, i);
    }
    return found;
  }
}
