/**
 * The placeholders `images.get_image(image)` leaves in rendered templates (written by kluctl_images.py), in Kluctl's
 * format (kluctl's pkg/kluctl_jinja2/ext/images_ext.py): BEGIN, then the standard padded base64 of the UTF-8 JSON
 * `{"image": "<image>"}`, then END. Which image gets deployed is only known after rendering (fixed images, the image
 * already deployed; docs/kluctl/deployments/images.md), so the caller finds the placeholders in the rendered objects
 * and replaces each with the image it resolves.
 */

/** Must stay equal to PLACEHOLDER_BEGIN and PLACEHOLDER_END in kluctl_images.py. */
export const BEGIN = 'XXXXXbegin_get_image_';
export const END = '_end_get_imageXXXXX';

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export interface ImagePlaceholder {
  /** The image the template asked for, e.g. `nginx` or `registry.example.com/app`. */
  image: string;
  /** Offset of the placeholder's first character in the text (UTF-16 code units, as String.prototype.slice). */
  start: number;
  /** Offset just after the placeholder: `text.slice(0, start) + resolved + text.slice(end)` replaces it. */
  end: number;
}

/**
 * Every placeholder in `text`, in order of appearance; none gives [].
 * @throws Error naming the offset when a BEGIN has no END after it, or the payload between them is not base64 of a
 *   JSON object with a string `image`.
 */
export function parseImagePlaceholders(text: string): ImagePlaceholder[] {
  const found: ImagePlaceholder[] = [];
  for (let start = text.indexOf(BEGIN); start !== -1; start = text.indexOf(BEGIN, start + BEGIN.length)) {
    const payloadStart = start + BEGIN.length;
    const payloadEnd = text.indexOf(END, payloadStart);
    if (payloadEnd === -1) throw new Error(`image placeholder at offset ${start} has no end marker ${END}`);
    const image = imageOf(text.slice(payloadStart, payloadEnd), start);
    found.push({ image, start, end: payloadEnd + END.length });
  }
  return found;
}

function imageOf(payload: string, offset: number): string {
  const invalid = (why: string): Error => new Error(`image placeholder at offset ${offset} is invalid: ${why}`);
  if (!BASE64.test(payload)) throw invalid('its payload is not base64');
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(payload, 'base64').toString('utf8'));
  } catch {
    throw invalid('its payload is not JSON');
  }
  const image = (decoded as { image?: unknown } | null)?.image;
  if (typeof image !== 'string') throw invalid('its payload has no string "image"');
  return image;
}
