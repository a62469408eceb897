import { crc32, deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { decodePng, findColour } from '../../harness/png.ts';

// PNGs encoded here byte by byte, with every row filter type, and decoded back.

function chunk(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(body.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), body])));
  return Buffer.concat([head, body, crc]);
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const [pa, pb, pc] = [Math.abs(p - a), Math.abs(p - b), Math.abs(p - c)];
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/** Encodes `pixels` (channels bytes per pixel), row `y` with filter type `y % 5`. */
function encode(
  width: number,
  height: number,
  channels: 3 | 4,
  pixels: Uint8Array,
  header: Partial<{ depth: number; interlace: number }> = {},
): Buffer {
  const stride = width * channels;
  const raw = Buffer.alloc(height * (stride + 1));
  for (let y = 0; y < height; y++) {
    const filter = y % 5;
    raw[y * (stride + 1)] = filter;
    for (let i = 0; i < stride; i++) {
      const x = pixels[y * stride + i] ?? 0;
      const a = i >= channels ? (pixels[y * stride + i - channels] ?? 0) : 0;
      const b = y > 0 ? (pixels[(y - 1) * stride + i] ?? 0) : 0;
      const c = y > 0 && i >= channels ? (pixels[(y - 1) * stride + i - channels] ?? 0) : 0;
      const predictor = [0, a, b, (a + b) >> 1, paeth(a, b, c)][filter] ?? 0;
      raw[y * (stride + 1) + 1 + i] = (x - predictor) & 0xff;
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = header.depth ?? 8;
  ihdr[9] = channels === 3 ? 2 : 6;
  ihdr[12] = header.interlace ?? 0;
  const data = deflateSync(raw);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    // Image data split over two chunks, as encoders may write it.
    chunk('IDAT', data.subarray(0, data.length >> 1)),
    chunk('IDAT', data.subarray(data.length >> 1)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** Pixels that make every filter's predictor matter: gradients plus a pattern. */
function pattern(width: number, height: number, channels: number): Uint8Array {
  const out = new Uint8Array(width * height * channels);
  for (let i = 0; i < out.length; i++) out[i] = (i * 37 + Math.floor(i / (width * channels)) * 91) & 0xff;
  return out;
}

describe('decodePng', () => {
  it('decodes RGBA with all five filter types', () => {
    const [w, h] = [7, 10];
    const pixels = pattern(w, h, 4);
    const image = decodePng(encode(w, h, 4, pixels));
    expect([image.width, image.height]).toEqual([w, h]);
    expect([...image.rgba]).toEqual([...pixels]);
  });

  it('decodes RGB into RGBA with opaque alpha', () => {
    const [w, h] = [5, 6];
    const pixels = pattern(w, h, 3);
    const image = decodePng(encode(w, h, 3, pixels));
    const expected: number[] = [];
    for (let p = 0; p < w * h; p++)
      expected.push(pixels[p * 3] ?? 0, pixels[p * 3 + 1] ?? 0, pixels[p * 3 + 2] ?? 0, 255);
    expect([...image.rgba]).toEqual(expected);
  });

  it('refuses what it cannot read', () => {
    const pixels = pattern(2, 2, 3);
    expect(() => decodePng(Buffer.from('GIF89a not a png'))).toThrow(/bad signature/);
    expect(() => decodePng(encode(2, 2, 3, pixels, { interlace: 1 }))).toThrow(/interlaced/);
    expect(() => decodePng(encode(2, 2, 3, pixels, { depth: 16 }))).toThrow(/bit depth 16/);
  });
});

describe('findColour', () => {
  it('counts matching pixels within the tolerance and boxes them', () => {
    // 4 × 3 white image with a 2 × 2 block of near-#1d4ed8 at x 1..2, y 1..2.
    const [w, h] = [4, 3];
    const pixels = new Uint8Array(w * h * 3).fill(255);
    for (const [x, y] of [
      [1, 1],
      [2, 1],
      [1, 2],
      [2, 2],
    ] as const) {
      pixels.set([0x1d + 3, 0x4e - 2, 0xd8], (y * w + x) * 3);
    }
    const image = decodePng(encode(w, h, 3, pixels));
    expect(findColour(image, '#1d4ed8')).toEqual({ count: 4, box: { left: 1, top: 1, right: 2, bottom: 2 } });
    expect(findColour(image, '#1d4ed8', 1)).toEqual({ count: 0 });
  });
});
