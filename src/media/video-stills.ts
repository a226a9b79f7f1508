/**
 * Stills of a video for its `thumbnail` and `spritesheet` downloads, made when the video is made.
 *
 * reelay has no H.264 *decoder* in process (ffmpeg is not there at run time; the WebAssembly
 * decoders on npm decode Baseline profile only, and GPU backends send High profile), so stills
 * are not read back out of the MP4. Instead:
 * - a video encoded by the host (ctx.host.encodeMp4, e.g. the preview renderer) is sampled on the
 *   encoder's worker thread while its frames are encoded: the first frame whole, one frame per
 *   second of video downscaled to a tile; the same worker makes the JPEGs after the MP4. They ride
 *   on the returned MP4 bytes (a symbol property, so they follow the bytes through the plugin's
 *   hands without any state of their own) until the scheduler stores them;
 * - a video made elsewhere (a GPU backend's MP4) gets a thumbnail from the job's source image,
 *   cropped and scaled to the video's size (stills-pool.ts, also on a worker thread): image-to-video
 *   models start from that image, so it is what the first frame shows. It has no spritesheet: there
 *   is only one still to show.
 * None of this runs on the thread that serves requests: jpeg-js is plain JavaScript, and one
 * 480x832 JPEG took ~25-60 ms of it; 1,000 jobs finishing within seconds queued a minute of
 * them in front of every completion (bench/video-backends.ts, p50 60 s before the move).
 */
import jpeg from "jpeg-js";
import type { DecodedImage } from "./decode-image.ts";

const STILLS = Symbol.for("reelay.video-stills");
/** a spritesheet shows at most this many seconds (5 x 5 tiles); a longer clip is sampled evenly */
const MAX_TILES = 25;
/** tiles are the frame at a quarter of its width and height */
const TILE_DIVISOR = 4;
const JPEG_QUALITY = 82;

export interface VideoStills {
  width: number;
  height: number;
  /** the first frame, RGBA */
  first: Uint8Array;
  /** one frame per second (sampled evenly past MAX_TILES), RGBA tiles of tileWidth x tileHeight */
  tiles: Uint8Array[];
  tileWidth: number;
  tileHeight: number;
}

/** Collects stills from frames as they are encoded (the encoder pool feeds it). */
export class StillsSampler {
  private first: Uint8Array | null = null;
  private readonly tiles: Uint8Array[] = [];
  readonly tileWidth: number;
  readonly tileHeight: number;

  constructor(readonly width: number, readonly height: number, private readonly fps: number) {
    this.tileWidth = Math.max(2, Math.floor(width / TILE_DIVISOR));
    this.tileHeight = Math.max(2, Math.floor(height / TILE_DIVISOR));
  }

  /** frame `index` (RGBA, width x height): kept when it is the first frame or starts a second */
  add(frame: Uint8Array, index: number): void {
    if (index === 0) this.first = frame.slice();
    if (index % this.fps === 0) this.tiles.push(resample(frame, this.width, this.height, { x: 0, y: 0, w: this.width, h: this.height }, this.tileWidth, this.tileHeight));
  }

  finish(): VideoStills | null {
    if (!this.first) return null;
    const step = Math.max(1, this.tiles.length / MAX_TILES);
    const tiles = this.tiles.length <= MAX_TILES ? this.tiles : Array.from({ length: MAX_TILES }, (_, i) => this.tiles[Math.floor(i * step)]!);
    return { width: this.width, height: this.height, first: this.first, tiles, tileWidth: this.tileWidth, tileHeight: this.tileHeight };
  }
}

/** The stills as stored: JPEG bytes */
export interface StillJpegs {
  thumbnail: Uint8Array;
  spritesheet?: Uint8Array;
}

/** The first frame and the grid of tiles as JPEGs (on the encoder's worker thread). */
export function jpegsOf(stills: VideoStills): StillJpegs {
  const sheet = spritesheetOf(stills);
  return { thumbnail: jpegOf(stills.first, stills.width, stills.height), spritesheet: jpegOf(sheet.rgba, sheet.width, sheet.height) };
}

/** Let the stills travel with the MP4 bytes they were taken from. */
export function attachStills(mp4: Uint8Array, stills: StillJpegs | null): Uint8Array {
  if (stills) Object.defineProperty(mp4, STILLS, { value: stills, enumerable: false });
  return mp4;
}

export function stillsOf(mp4: Uint8Array): StillJpegs | undefined {
  return (mp4 as unknown as Record<symbol, StillJpegs | undefined>)[STILLS];
}

/** The source image cropped to the video's aspect ratio (centred) and scaled to its size: a thumbnail for videos made elsewhere. */
export function stillFromImage(image: DecodedImage, width: number, height: number): Uint8Array {
  const scale = Math.min(image.width / width, image.height / height);
  const w = Math.max(1, Math.round(width * scale));
  const h = Math.max(1, Math.round(height * scale));
  return resample(image.rgba, image.width, image.height, { x: Math.floor((image.width - w) / 2), y: Math.floor((image.height - h) / 2), w, h }, width, height);
}

export function jpegOf(rgba: Uint8Array, width: number, height: number): Uint8Array {
  const out = jpeg.encode({ data: rgba, width, height }, JPEG_QUALITY);
  // a copy with a buffer of its own (jpeg-js may hand out a view of a shared pool slab): it is transferred between threads
  return new Uint8Array(out.data);
}

/** The grid of tiles, row by row (columns = ceil(sqrt(n))); cells past the last tile are black. */
export function spritesheetOf(stills: VideoStills): { rgba: Uint8Array; width: number; height: number; columns: number; rows: number } {
  const n = stills.tiles.length;
  const columns = Math.ceil(Math.sqrt(n));
  const rows = Math.ceil(n / columns);
  const width = columns * stills.tileWidth;
  const height = rows * stills.tileHeight;
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 3; i < rgba.length; i += 4) rgba[i] = 255;
  stills.tiles.forEach((tile, i) => {
    const ox = (i % columns) * stills.tileWidth;
    const oy = Math.floor(i / columns) * stills.tileHeight;
    for (let y = 0; y < stills.tileHeight; y++) {
      rgba.set(tile.subarray(y * stills.tileWidth * 4, (y + 1) * stills.tileWidth * 4), ((oy + y) * width + ox) * 4);
    }
  });
  return { rgba, width, height, columns, rows };
}

/** `region` of an RGBA image scaled to w x h: each output pixel averages the source pixels it covers (at least one). */
function resample(src: Uint8Array, srcWidth: number, _srcHeight: number, region: { x: number; y: number; w: number; h: number }, w: number, h: number): Uint8Array {
  const out = new Uint8Array(w * h * 4);
  const sx = region.w / w;
  const sy = region.h / h;
  for (let y = 0; y < h; y++) {
    const y0 = region.y + Math.floor(y * sy);
    const y1 = Math.max(y0 + 1, region.y + Math.floor((y + 1) * sy));
    for (let x = 0; x < w; x++) {
      const x0 = region.x + Math.floor(x * sx);
      const x1 = Math.max(x0 + 1, region.x + Math.floor((x + 1) * sx));
      let r = 0, g = 0, b = 0, n = 0;
      for (let yy = y0; yy < y1; yy++) {
        let i = (yy * srcWidth + x0) * 4;
        for (let xx = x0; xx < x1; xx++, i += 4) {
          r += src[i]!;
          g += src[i + 1]!;
          b += src[i + 2]!;
          n++;
        }
      }
      const o = (y * w + x) * 4;
      out[o] = r / n;
      out[o + 1] = g / n;
      out[o + 2] = b / n;
      out[o + 3] = 255;
    }
  }
  return out;
}
