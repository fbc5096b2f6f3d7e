/**
 * sharp is an optional dependency: raw RGB at the encoder size needs no sharp at all, and without
 * sharp an image that needs decoding is an UnsupportedError that names the package.
 */
describe('images without sharp installed', () => {
  let imageToRgb: typeof import('../../lib/models/image').imageToRgb;
  let UnsupportedError: typeof import('../../lib/base/errors').UnsupportedError;

  beforeAll(() => {
    jest.isolateModules(() => {
      jest.doMock('sharp', () => {
        throw new Error("Cannot find module 'sharp'");
      });
      ({ imageToRgb } = require('../../lib/models/image'));
      ({ UnsupportedError } = require('../../lib/base/errors'));
    });
  });

  test('raw RGB at the encoder size is used as it is', async () => {
    const rgb = Uint8Array.from({ length: 4 * 4 * 3 }, (_, i) => i);
    expect(await imageToRgb({ data: rgb, width: 4, height: 4, channels: 3 }, 4)).toBe(rgb);
  });

  test('encoded bytes name the missing package', async () => {
    const png = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    const failure = imageToRgb(png, 4);
    await expect(failure).rejects.toBeInstanceOf(UnsupportedError);
    await expect(failure).rejects.toThrow(/optional package 'sharp'.*npm install sharp/);
  });

  test('raw pixels of another size name the missing package', async () => {
    const rgba = new Uint8Array(2 * 2 * 4);
    await expect(imageToRgb({ data: rgba, width: 2, height: 2, channels: 4 }, 4)).rejects.toThrow(/'sharp'/);
  });
});
