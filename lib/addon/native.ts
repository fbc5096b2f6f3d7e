/**
 * Loads the native addon once: WEIGHTMAP_ADDON (an explicit .node path, for side-by-side
 * builds) or node-gyp-build (prebuilds/ for this platform, then build/Release, build/Debug).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { NativeBinding } from './binding';

let cached: NativeBinding | undefined;

/** lib/ under ts-jest, dist/cjs/ once built: the package root is the nearest folder with package.json. */
function findPackageRoot(): string {
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, 'package.json')) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return dir;
}

export const packageRoot = findPackageRoot();

export function native(): NativeBinding {
  if (cached) return cached;
  const tried: string[] = [];
  const explicit = process.env.WEIGHTMAP_ADDON;
  try {
    if (explicit) {
      tried.push(explicit);
      cached = require(path.resolve(explicit)) as NativeBinding;
    } else {
      tried.push(`prebuilds/${process.platform}-${process.arch}`, 'build/Release', 'build/Debug');
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const load = require('node-gyp-build') as (dir: string) => unknown;
      cached = load(packageRoot) as NativeBinding;
    }
  } catch (cause) {
    const error = new Error(
      `weightmap: the native addon could not be loaded for ${process.platform}-${process.arch} ` +
        `(Node ${process.version}, N-API ${process.versions.napi}). Tried: ${tried.join(', ')} under ${packageRoot}. ` +
        `Build it from source with \`npm rebuild weightmap\` (needs cmake >= 3.15 and a C++17 compiler). ` +
        `Cause: ${(cause as Error).message}`,
      { cause },
    );
    (error as NodeJS.ErrnoException).code = 'ERR_WEIGHTMAP_ADDON';
    throw error;
  }
  return cached;
}
