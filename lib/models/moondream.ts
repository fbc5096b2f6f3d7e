/** loadMoondream: loadModel typed for Moondream weights. The model class is in moondream-model.ts. */
import { UnsupportedError } from '../base/errors';
import { loadModel, type LoadModelOptions } from './model';
import { MoondreamModel } from './moondream-model';

export * from './moondream-model';

/** loadModel for Moondream weights, typed as a MoondreamModel (UnsupportedError for other models). */
export async function loadMoondream(path: string, options: LoadModelOptions = {}): Promise<MoondreamModel> {
  const model = await loadModel(path, options);
  if (!(model instanceof MoondreamModel)) {
    model.dispose();
    throw new UnsupportedError(`${path} is not a Moondream model (architecture ${model.info.architecture})`);
  }
  return model;
}
