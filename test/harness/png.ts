import { inflateSync } from 'node:zlib';
import { HarnessError } from './errors.ts';

// A small PNG decoder for checking screenshots: 8-bit RGB or RGBA, not interlaced, every filter
// type. Enough for what headless Chromium writes; anything else is refused with a clear error.

/** Decoded pixels, 4 bytes (RGBA) per pixel, row by row. */
export interface Image {
  readonly width: number;
  readonly height: number;
  readonly rgba: Uint8Array;
}

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * Decodes a PNG file's bytes.
 * @throws HarnessError for a file that is not a PNG or uses a format this decoder does not read.
 */
export function decodePng(bytes: Uint8Array): Image {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length < 8 || !buf.subarray(0, 8).equals(SIGNATURE))
    throw new HarnessError('not a PNG file (bad signature)');
  let offset = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const data: Buffer[] = [];
  while (offset + 8 <= buf.length) {
    const length = buf.readUInt32BE(offset);
    const type = buf.toString('latin1', offset + 4, offset + 8);
    const body = buf.subarray(offset + 8, offset + 8 + length);
    offset += 12 + length; // length, type, body, CRC
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      const [depth, colourType, compression, filter, interlace] = [
        body[8],
        body[9],
        body[10],
        body[11],
        body[12],
      ];
      if (depth !== 8) throw new HarnessError(`PNG bit depth ${depth} is not supported (only 8)`);
      if (colourType === 2) channels = 3;
      else if (colourType === 6) channels = 4;
      else throw new HarnessError(`PNG colour type ${colourType} is not supported (only RGB 2 and RGBA 6)`);
      if (compression !== 0 || filter !== 0)
        throw new HarnessError('PNG compression or filter method is not 0');
      if (interlace !== 0) throw new HarnessError('interlaced PNGs are not supported');
    } else if (type === 'IDAT') {
      data.push(body);
    } else if (type === 'IEND') {
      break;
    }
  }
  if (channels === 0) throw new HarnessError('PNG has no IHDR chunk');
  const raw = inflateSync(Buffer.concat(data));
  const stride = width * channels;
  if (raw.length < height * (stride + 1)) {
    throw new HarnessError(`PNG image data is ${raw.length} bytes, expected ${height * (stride + 1)}`);
  }
  const pixels = new Uint8Array(height * stride);
  for (let row = 0; row < height; row++) {
    const filter = raw[row * (stride + 1)];
    const src = row * (stride + 1) + 1;
    const dst = row * stride;
    for (let i = 0; i < stride; i++) {
      const x = raw[src + i] ?? 0;
      const a = i >= channels ? (pixels[dst + i - channels] ?? 0) : 0;
      const b = row > 0 ? (pixels[dst - stride + i] ?? 0) : 0;
      const c = row > 0 && i >= channels ? (pixels[dst - stride + i - channels] ?? 0) : 0;
      let value: number;
      switch (filter) {
        case 0:
          value = x;
          break;
        case 1:
          value = x + a;
          break;
        case 2:
          value = x + b;
          break;
        case 3:
          value = x + ((a + b) >> 1);
          break;
        case 4:
          value = x + paeth(a, b, c);
          break;
        default:
          throw new HarnessError(`PNG row ${row} has unknown filter type ${filter}`);
      }
      pixels[dst + i] = value & 0xff;
    }
  }
  if (channels === 4) return { width, height, rgba: pixels };
  const rgba = new Uint8Array(width * height * 4);
  for (let p = 0; p < width * height; p++) {
    rgba[p * 4] = pixels[p * 3] ?? 0;
    rgba[p * 4 + 1] = pixels[p * 3 + 1] ?? 0;
    rgba[p * 4 + 2] = pixels[p * 3 + 2] ?? 0;
    rgba[p * 4 + 3] = 255;
  }
  return { width, height, rgba };
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  return pb <= pc ? b : c;
}

/** Where one colour appears in an image. */
export interface ColourRegion {
  readonly count: number;
  /** Bounding box of the matching pixels (inclusive); undefined when none match. */
  readonly box?: {
    readonly left: number;
    readonly top: number;
    readonly right: number;
    readonly bottom: number;
  };
}

/** Pixels within `tolerance` (per channel) of `#rrggbb`, and their bounding box. */
export function findColour(image: Image, hex: string, tolerance = 8): ColourRegion {
  const match = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex);
  if (match === null) throw new HarnessError(`not a #rrggbb colour: ${hex}`);
  const [r, g, b] = [match[1], match[2], match[3]].map((h) => Number.parseInt(h ?? '0', 16)) as [
    number,
    number,
    number,
  ];
  let count = 0;
  let left = Number.POSITIVE_INFINITY;
  let top = Number.POSITIVE_INFINITY;
  let right = -1;
  let bottom = -1;
  const { rgba, width, height } = image;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 4;
      if (
        Math.abs((rgba[i] ?? 0) - r) <= tolerance &&
        Math.abs((rgba[i + 1] ?? 0) - g) <= tolerance &&
        Math.abs((rgba[i + 2] ?? 0) - b) <= tolerance
      ) {
        count += 1;
        left = Math.min(left, x);
        top = Math.min(top, y);
        right = Math.max(right, x);
        bottom = Math.max(bottom, y);
      }
    }
  }
  return count === 0 ? { count } : { count, box: { left, top, right, bottom } };
}
