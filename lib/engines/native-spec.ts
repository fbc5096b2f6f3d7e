/**
 * The tensor description native engines read (native/engines/weights_spec.h): the mapped files
 * of a ModelWeights and, by canonical name, each view's dtype, stored shape and byte range. The
 * native side checks every range against its mapping again before using it.
 */
import type { EngineTensorDesc, EngineWeightsSpec, MappedFile } from '../addon/binding';
import type { ModelWeights } from '../addon/weights';

/**
 * The spec of every tensor of `weights` (or only those `include` accepts). With `anyOrder`, a view
 * stored transposed is described by its canonical shape and `transposed: true` (the engine
 * transposes it at load); without, by its stored shape, as the engines that read [in,out] expect.
 */
export function nativeWeightsSpec(weights: ModelWeights, include: (name: string) => boolean = () => true, anyOrder = false): EngineWeightsSpec {
  const files: MappedFile[] = [];
  const index = new Map<unknown, number>();
  const tensors: Record<string, EngineTensorDesc> = {};
  for (const view of weights.tensors) {
    if (!include(view.name)) continue;
    let file = index.get(view.source);
    if (file === undefined) {
      file = files.length;
      files.push(view.source.file);
      index.set(view.source, file);
    }
    tensors[view.name] = {
      dtype: view.dtype,
      shape: anyOrder && view.transposed ? [...view.shape].reverse() : [...view.shape],
      ...(anyOrder && view.transposed ? { transposed: true } : {}),
      file,
      byteOffset: view.byteOffset,
      byteLength: view.byteLength,
      ...(view.scales ? { scales: { ...view.scales } } : {}),
    };
  }
  return { files, tensors };
}
