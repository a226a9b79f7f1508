/**
 * The playground's default output size for a photo: its own orientation, so that a landscape photo
 * is not cropped to a portrait video (the preview model fills the frame). Nearly square photos
 * (within 15 %) get the square size.
 */
export function sizeFor(width: number, height: number): "832x480" | "480x832" | "624x624" {
  if (width > height * 1.15) return "832x480";
  if (height > width * 1.15) return "480x832";
  return "624x624";
}
