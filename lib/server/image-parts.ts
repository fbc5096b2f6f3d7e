/**
 * Image content parts of a chat request (`{ type: 'image_url', image_url: { url } }`): for a
 * Moondream model, the one image and the question it answers (the text of the same user message);
 * the image as a data URL (`data:image/png;base64,...`, decoded by sharp) or a local file under a
 * folder the operator allowed (ServeOptions.imageDirs). Anything else is a one-line 400 naming the
 * part: a model without vision, a second image, a URL to fetch (this server fetches nothing).
 * For a model with an mmproj (a VisionModel), the messages with their image parts as images, at
 * most MAX_IMAGES of them.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { fileURLToPath } from 'node:url';
import { invalidRequest } from './api-error';
import type { ChatMessageBody } from './validation';

/** The largest image one request may carry or name (bytes). */
export const MAX_IMAGE_BYTES = 20 << 20;
/** The most images one request may carry (a model with an mmproj). */
export const MAX_IMAGES = 8;

export interface ImageQuestion {
  /** The encoded image (JPEG, PNG, WebP, ...). */
  image: Uint8Array;
  question: string;
}

type Part = Exclude<NonNullable<ChatMessageBody['content']>, string>[number];

/** The image parts of `messages`, with the field each is at. */
function imageParts(messages: readonly ChatMessageBody[]): { message: number; field: string; url: string }[] {
  const out: { message: number; field: string; url: string }[] = [];
  messages.forEach((m, i) => {
    if (!Array.isArray(m.content)) return;
    m.content.forEach((part: Part, j) => {
      if (part.type === 'image_url') out.push({ message: i, field: `messages[${i}].content[${j}].image_url`, url: part.image_url.url });
    });
  });
  return out;
}

/** True when some message carries an image part. */
export function hasImages(messages: readonly ChatMessageBody[]): boolean {
  return imageParts(messages).length > 0;
}

function imageBytes(url: string, field: string, imageDirs: readonly string[]): Uint8Array {
  const data = /^data:image\/[\w.+-]+;base64,/i.exec(url);
  if (data) {
    const base64 = url.slice(data[0].length);
    if ((base64.length * 3) / 4 > MAX_IMAGE_BYTES) throw invalidRequest(`${field}.url: the image is larger than ${MAX_IMAGE_BYTES} bytes`, `${field}.url`);
    return Buffer.from(base64, 'base64');
  }
  if (/^https?:/i.test(url)) throw invalidRequest(`${field}.url: this server fetches no URLs; send the image as a data URL (data:image/png;base64,...)`, `${field}.url`);
  let file: string;
  try {
    file = url.startsWith('file:') ? fileURLToPath(url) : url;
  } catch {
    throw invalidRequest(`${field}.url: not a data URL, nor a file URL`, `${field}.url`);
  }
  if (!nodePath.isAbsolute(file)) throw invalidRequest(`${field}.url: a data URL, or the absolute path of a local file under an allowed folder`, `${field}.url`);
  const real = (p: string) => {
    try {
      return fs.realpathSync(p);
    } catch {
      return undefined;
    }
  };
  const target = real(file);
  // Under an allowed folder once links are resolved (a link out of the folder is not under it).
  const allowed = target !== undefined && imageDirs.some((dir) => {
    const root = real(dir);
    return root !== undefined && target.startsWith(root.endsWith(nodePath.sep) ? root : root + nodePath.sep);
  });
  if (!allowed) {
    throw invalidRequest(`${field}.url: local files are read only under the folders the server allows (serve --image-dir); send the image as a data URL`, `${field}.url`);
  }
  const stat = fs.statSync(target);
  if (!stat.isFile() || stat.size > MAX_IMAGE_BYTES) throw invalidRequest(`${field}.url: not a file of at most ${MAX_IMAGE_BYTES} bytes`, `${field}.url`);
  return fs.readFileSync(target);
}

/**
 * The image and question of a chat request for a model with vision (`vision`), undefined when it
 * has no image parts; a 400 naming the part for a model without vision or a request it cannot answer.
 */
export function imageQuestion(messages: readonly ChatMessageBody[], vision: boolean, imageDirs: readonly string[]): ImageQuestion | undefined {
  const images = imageParts(messages);
  if (images.length === 0) return undefined;
  const [first] = images;
  if (!vision) {
    throw invalidRequest(`${first.field}: image parts need a vision model (a Moondream model served by this server); this model reads text only`, first.field);
  }
  if (images.length > 1) throw invalidRequest(`${images[1].field}: a Moondream model answers about one image per request`, images[1].field);
  const last = messages.length - 1;
  const asked = messages[first.message];
  const before = messages.slice(0, first.message).every((m) => m.role === 'system' || m.role === 'developer');
  if (first.message !== last || asked.role !== 'user' || !before) {
    throw invalidRequest(`messages: a Moondream model answers one question about one image: send one user message with the image and the question (system messages aside)`, 'messages');
  }
  const question = (asked.content as Part[])
    .map((part) => (part.type === 'text' ? part.text : ''))
    .join(' ')
    .trim();
  if (question === '') throw invalidRequest(`messages[${last}].content: the question (a text part beside the image) is empty`, `messages[${last}].content`);
  return { image: imageBytes(first.url, first.field, imageDirs), question };
}

/**
 * The conversation with its image parts read (imageBytes), for a model with an mmproj; a 400 past
 * MAX_IMAGES. Text parts stay text; `toText` makes each message's other fields.
 */
export function visionMessages<M extends { content: unknown }>(
  messages: readonly ChatMessageBody[],
  imageDirs: readonly string[],
  toText: (m: ChatMessageBody) => Omit<M, 'content'>,
): (Omit<M, 'content'> & { content: string | ({ type: 'text'; text: string } | { type: 'image'; image: Uint8Array })[] })[] {
  const images = imageParts(messages);
  if (images.length > MAX_IMAGES) throw invalidRequest(`${images[MAX_IMAGES].field}: at most ${MAX_IMAGES} images per request`, images[MAX_IMAGES].field);
  return messages.map((m, i) => {
    const rest = toText(m);
    if (!Array.isArray(m.content)) return { ...rest, content: m.content ?? '' };
    return {
      ...rest,
      content: m.content.map((part: Part, j) =>
        part.type === 'text' ? { type: 'text' as const, text: part.text } : { type: 'image' as const, image: imageBytes(part.image_url.url, `messages[${i}].content[${j}].image_url`, imageDirs) },
      ),
    };
  });
}
