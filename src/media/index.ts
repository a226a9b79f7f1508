export { decodeImage, describePixelLimit, sniffImageType, ImageDecodeError, MAX_IMAGE_PIXELS, type DecodedImage, type ImageMime } from "./decode-image.ts";
export { encodeMp4, Mp4EncodeError, type EncodeMp4Options } from "./encode-mp4.ts";
export { moveMoovToFront, isFaststart, listTopLevelBoxes } from "./mp4-faststart.ts";
