// Tests run the TypeScript sources through ts-jest (transpile only; `npm run typecheck` checks
// types), against the native addon built in ./build (or WEIGHTMAP_ADDON).
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { isolatedModules: true, diagnostics: false }] },
  testTimeout: 60000,
  maxWorkers: 2,
};
