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
// different bytes without a word. AWS sends standard base64 with padding; accept only that.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Decodes standard, padded base64; `undefined` if `text` is not exactly that.
 *
 * @example
 * decodeBase64('cmVjb3JkS2V5')?.toString(); // 'recordKey'
 * decodeBase64('not base64!'); // undefined
 */
export function decodeBase64(text: string): Buffer | undefined {
  return BASE64.test(text) ? Buffer.from(text, 'base64') : undefined;
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
