/**
 * Byte conversions of the Kafka event: AWS serialises header values as Java `byte[]`, i.e. JSON arrays of
 * signed bytes (-128..127), and keys and values as standard, padded base64.
 */

/**
 * True if `value` is an integer in -128..127, a Java `byte`.
 *
 * @example
 * isSignedByte(-61); // true
 * isSignedByte(195); // false: AWS sends the signed form
 */
export function isSignedByte(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= -128 && value <= 127;
}

/**
 * Turns a Java `byte[]` as AWS sends it into the bytes it stands for.
 *
 * @throws RangeError if an element is not a signed byte.
 * @example
 * signedBytesToBuffer([-61, -85]).toString('utf8'); // 'ë'
 */
export function signedBytesToBuffer(bytes: readonly number[]): Buffer {
  const index = bytes.findIndex((byte) => !isSignedByte(byte));
  if (index !== -1) {
    throw new RangeError(`Expected \`bytes[${index}]\` to be a signed byte (-128..127), got \`${String(bytes[index])}\``);
  }
  // Buffer.from(array) keeps the low 8 bits of each number, which is exactly two's complement: -61 -> 0xc3.
  return Buffer.from(bytes);
}

/**
 * Turns bytes into a Java `byte[]` as AWS sends it.
 *
 * @example
 * bufferToSignedBytes(Buffer.from('ë')); // [-61, -85]
 */
export function bufferToSignedBytes(bytes: Uint8Array): number[] {
  return Array.from(new Int8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
}

// Buffer.from(s, 'base64') silently skips characters outside the alphabet, so a corrupt key would decode to
// different bytes without a word. AWS sends standard base64 with padding; accept only that. Checked by a loop,
// not a regular expression: V8's backtracking matcher overflows its stack on a value of a few megabytes
// (3.4 MB of bytes, 4.5 MB of text), well inside the 6 MB a Lambda event may hold.
const ALPHABET = new Uint8Array(128);
/** Each character's 6 bits. */
const VALUE = new Uint8Array(128);
[...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'].forEach((char, value) => {
  ALPHABET[char.charCodeAt(0)] = 1;
  VALUE[char.charCodeAt(0)] = value;
});
const PAD = '='.charCodeAt(0);

/**
 * True if `text` is standard, padded base64: a multiple of 4 characters of the standard alphabet, with at most two
 * `=` at the very end. Linear time, constant stack.
 *
 * @example
 * isBase64('YQ=='); // true
 * isBase64('YQ'); // false: unpadded
 * isBase64('-_8='); // false: URL-safe alphabet
 */
export function isBase64(text: string): boolean {
  const length = text.length;
  if (length % 4 !== 0) return false;
  let end = length;
  if (end > 0 && text.charCodeAt(end - 1) === PAD) end -= 1;
  if (end > 0 && text.charCodeAt(end - 1) === PAD) end -= 1;
  for (let i = 0; i < end; i += 1) {
    const code = text.charCodeAt(i);
    if (code >= 128 || ALPHABET[code] === 0) return false;
  }
  return true;
}

/**
 * True if `text`, standard padded base64 (`isBase64`), is what encoding its bytes gives: the bits its padding leaves
 * over are zero (`YQ==`, not `YR==`, for `a`). Then the text itself is the base64 of its bytes, with no decoding.
 *
 * @example
 * isCanonicalBase64('YQ=='); // true
 * isCanonicalBase64('YR=='); // false: decodes to `a` as well, which encodes as `YQ==`
 */
export function isCanonicalBase64(text: string): boolean {
  const length = text.length;
  if (length === 0 || text.charCodeAt(length - 1) !== PAD) return true;
  const padding = text.charCodeAt(length - 2) === PAD ? 2 : 1;
  const last = text.charCodeAt(length - 1 - padding);
  // Two `=`: the last character carries 2 bits of data and 4 of padding; one `=`: 4 and 2.
  return last < 128 && (VALUE[last]! & (padding === 2 ? 0b1111 : 0b11)) === 0;
}

/**
 * Decodes standard, padded base64; `undefined` if `text` is not exactly that.
 *
 * @example
 * decodeBase64('cmVjb3JkS2V5')?.toString(); // 'recordKey'
 * decodeBase64('not base64!'); // undefined
 */
export function decodeBase64(text: string): Buffer | undefined {
  return isBase64(text) ? Buffer.from(text, 'base64') : undefined;
}

/**
 * Encodes bytes as standard, padded base64, as AWS does.
 *
 * @example
 * encodeBase64(Buffer.from('recordKey')); // 'cmVjb3JkS2V5'
 */
export function encodeBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}
