/**
 * The engines use weights in place, in the orientation their source format stores: TLLM and
 * MOON's vision side [in,out] (views marked `transposed`), MOON's text side [out,in]. A view in
 * the other orientation (weights converted from elsewhere) would be read wrongly whenever its
 * shape is square, so loading refuses it with a clear error instead.
 */
import { UnsupportedError } from '../base/errors';
import { findTensor, type ModelWeights } from '../addon/weights';

/** Throws UnsupportedError unless each named view's `transposed` flag is `storedInOut`. */
export function requireOrientation(weights: ModelWeights, names: readonly string[], storedInOut: boolean, engine: string): void {
  for (const name of names) {
    const view = findTensor(weights, name);
    if (!view) continue; // a missing tensor is reported by the native side (MISSING_TENSOR)
    if ((view.transposed === true) !== storedInOut) {
      throw new UnsupportedError(
        `${engine} reads ${name} stored ${storedInOut ? '[in,out]' : '[out,in]'}, but ${weights.path} holds it ` +
          `${storedInOut ? '[out,in]' : '[in,out]'}; convert the model to ${storedInOut ? 'its original format' : 'MOON'} first`,
      );
    }
  }
}
