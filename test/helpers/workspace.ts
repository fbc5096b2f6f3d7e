/** A temporary folder for one test file: fresh paths in it, and reads whose mappings close when the file's tests end. */
import * as path from 'node:path';
import { readWeights } from '../../lib/formats';
import { closeWeights, type ModelWeights } from '../../lib/addon/weights';
import { tempDir } from './fixtures';

export interface Workspace {
  dir: string;
  /** A path in the workspace that no earlier call returned. */
  fresh(name: string): string;
  /** readWeights (or `reader`), closed after the file's tests. */
  read(file: string, reader?: (file: string) => Promise<ModelWeights>): Promise<ModelWeights>;
}

export function testWorkspace(prefix: string): Workspace {
  const tmp = tempDir(prefix);
  const opened: ModelWeights[] = [];
  let counter = 0;
  afterAll(() => {
    for (const w of opened) closeWeights(w);
    tmp.cleanup();
  });
  return {
    dir: tmp.dir,
    fresh: (name) => path.join(tmp.dir, `${counter++}-${name}`),
    async read(file, reader = (p) => readWeights(p)) {
      const w = await reader(file);
      opened.push(w);
      return w;
    },
  };
}
