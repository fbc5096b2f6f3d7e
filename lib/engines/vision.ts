/**
 * The vision encoder and projector of an mmproj GGUF (lib/architectures/clip) on the ViT engine
 * (native/engines/vit.h, layout 'gguf'): RGB at the encoder's size in, rows of the language
 * model's input out, encoded off the JS thread one image at a time.
 */
import type { VitModel } from '../addon/binding';
import { runsOn } from '../architectures';
import { CLIP_PROJECTORS, clipTensorRoles, type ClipConfig, type ImageLayout } from '../architectures/clip';
import { DisposedError, rangeError, UnsupportedError } from '../base/errors';
import { native } from '../addon/native';
import type { ModelWeights } from '../addon/weights';
import { fromNativeError, withAbort } from './native-errors';
import { nativeWeightsSpec } from './native-spec';

export class VisionEngine {
  private vision: VitModel | undefined;
  private encoding: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly config: ClipConfig,
    vision: VitModel,
  ) {
    this.vision = vision;
  }

  static async load(weights: ModelWeights, options: { threads?: number } = {}): Promise<VisionEngine> {
    if (!runsOn(weights.config, 'vit')) throw new UnsupportedError(`the vision engine runs an mmproj GGUF, not ${weights.config.architecture}`);
    const c = weights.config;
    try {
      const vision = await native().VitModel.load(
        { ...nativeWeightsSpec(weights), names: clipTensorRoles(c) },
        {
          layout: 'gguf',
          projector: CLIP_PROJECTORS[c.projectorType].engineProjector,
          activation: c.activation,
          hiddenSize: c.hiddenSize,
          numLayers: c.numLayers,
          numHeads: c.numHeads,
          headDim: c.headDim,
          intermediateSize: c.intermediateSize,
          patchSize: c.patchSize,
          imageSize: c.imageSize,
          numPatches: c.numPatches,
          textHiddenSize: c.projectionDim,
          layerNormEps: c.layerNormEps,
          imageMean: [...c.imageMean],
          imageStd: [...c.imageStd],
          merge: c.merge,
        },
        { threads: options.threads ?? 0 },
      );
      return new VisionEngine(c, vision);
    } catch (error) {
      throw fromNativeError(error, 'VisionEngine', weights.path);
    }
  }

  /** Rows one image gives (patches / merge²). */
  get imageTokens(): number {
    return this.config.numPatches / (this.config.merge * this.config.merge);
  }

  /** How the language model reads an image's rows; UnsupportedError for a projector whose layout weightmap lacks. */
  get imageLayout(): ImageLayout {
    const projector = CLIP_PROJECTORS[this.config.projectorType];
    if (!projector.imageLayout) throw new UnsupportedError(`chat with a ${projector.title} mmproj: ${projector.layoutMissing}`);
    return projector.imageLayout;
  }

  get threads(): number {
    return this.vision?.threads ?? 0;
  }

  /**
   * Image embeddings [imageTokens, projectionDim] of RGB bytes already at the encoder's size
   * ([imageSize, imageSize, 3], row-major). Calls queue: one image is encoded at a time.
   */
  encodeRgb(rgb: Uint8Array, options: { features?: boolean; signal?: AbortSignal } = {}): Promise<{ embeddings: Float32Array; features?: Float32Array }> {
    const size = this.config.imageSize;
    if (rgb.length !== size * size * 3) {
      return Promise.reject(rangeError(`the vision encoder takes ${size}x${size} RGB (${size * size * 3} bytes), got ${rgb.length} bytes`));
    }
    const run = async () => {
      const vision = this.vision;
      if (!vision) throw new DisposedError('VisionEngine');
      return withAbort(() => vision.encode(rgb, options.features ?? false), () => vision.abort(), options.signal, 'VisionEngine');
    };
    const result = this.encoding.then(run, run);
    this.encoding = result.catch(() => undefined);
    return result;
  }

  dispose(): void {
    this.vision?.dispose();
    this.vision = undefined;
  }
}
