/**
 * Text of values that come from outside (an event, a thrown value) for error messages, logs and headers. A
 * Kafka event is attacker-shaped input: a record may nest 20,000 levels deep or hold megabytes, and
 * `JSON.stringify` or `String()` of such a value overflows the stack or builds a huge string. The text here
 * (`boundedText`, `clip`, `thrownText`, `jsonText`) is bounded in depth and length and never throws. Beside it, the
 * framework's one check that an outside value is an object (`isObject`) and one reading of an error's message
 * (`messageOf`).
 */

/** How far `boundedText` goes. */
export interface BoundedTextLimits {
  /** Characters after which rendering stops; the result may exceed it by the last piece written. Default 80. */
  readonly maxLength?: number;
  /** Nesting levels shown; deeper arrays and objects show as `[…]` and `{…}`. Default 8. */
  readonly maxDepth?: number;
}

/** Thrown inside `boundedText` once enough has been written; never escapes it. */
const ENOUGH = Symbol('enough');

/**
 * JSON-like text of any value, cut after about `maxLength` characters and `maxDepth` levels; never throws.
 * For a small JSON value it is exactly `JSON.stringify`'s output. Getters and `toJSON` are not called, so
 * rendering runs no code of the value itself (a Buffer shows as `<Buffer 3 bytes>`).
 *
 * @example
 * boundedText({ a: [1, 2] }); // '{"a":[1,2]}'
 * boundedText(deeplyNested, { maxDepth: 2 }); // '[[[…]]]'
 */
export function boundedText(value: unknown, limits: BoundedTextLimits = {}): string {
  const maxLength = limits.maxLength ?? 80;
  const maxDepth = limits.maxDepth ?? 8;
  let out = '';
  const put = (text: string): void => {
    out += text;
    if (out.length > maxLength) throw ENOUGH;
  };
  const walk = (item: unknown, depth: number, inArray: boolean): void => {
    const leaf = leafText(item, inArray, maxLength);
    if (leaf !== undefined) {
      put(leaf);
      return;
    }
    const isArray = Array.isArray(item);
    if (depth >= maxDepth) {
      put(isArray ? '[…]' : '{…}');
      return;
    }
    if (isArray) {
      put('[');
      for (let i = 0; i < item.length; i += 1) {
        if (i > 0) put(',');
        walk(item[i], depth + 1, true);
      }
      put(']');
      return;
    }
    put('{');
    let first = true;
    for (const key of Object.keys(item as object)) {
      const descriptor = Object.getOwnPropertyDescriptor(item, key);
      if (descriptor === undefined) continue;
      if (!('value' in descriptor)) {
        put(`${first ? '' : ','}${JSON.stringify(key)}:[getter]`);
        first = false;
        continue;
      }
      const child: unknown = descriptor.value;
      if (child === undefined || typeof child === 'function' || typeof child === 'symbol') continue;
      put(`${first ? '' : ','}${JSON.stringify(key)}:`);
      first = false;
      walk(child, depth + 1, false);
    }
    put('}');
  };
  try {
    if (typeof value === 'function') return '[function]';
    walk(value, 0, false);
    return out;
  } catch (error) {
    if (error === ENOUGH) return out;
    // A Proxy whose traps throw, or a revoked one: what was written so far, and a mark.
    return `${out}<unreadable>`;
  }
}

/**
 * `boundedText` of a value that holds no other: a primitive, `null` or a byte view (its size, not its bytes);
 * `undefined` for an array or an object. `inArray`: as an array item, where JSON writes `null` for what it cannot hold.
 */
function leafText(item: unknown, inArray: boolean, maxLength: number): string | undefined {
  switch (typeof item) {
    case 'string':
      return JSON.stringify(item.length > maxLength ? item.slice(0, maxLength + 1) : item);
    case 'number':
      return Number.isFinite(item) ? String(item) : inArray ? 'null' : String(item);
    case 'boolean':
      return String(item);
    case 'bigint':
      return `${item.toString()}n`;
    case 'undefined':
    case 'function':
    case 'symbol':
      return inArray ? 'null' : typeof item === 'symbol' ? item.toString() : typeof item === 'function' ? '[function]' : 'undefined';
    default:
      break;
  }
  if (item === null) return 'null';
  if (ArrayBuffer.isView(item)) return `<${Buffer.isBuffer(item) ? 'Buffer' : item.constructor.name} ${item.byteLength} bytes>`;
  return undefined;
}

/**
 * `text` cut to at most `max` characters, ending in `...` when cut.
 *
 * @example
 * clip('abcdef', 5); // 'ab...'
 */
export function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, Math.max(0, max - 3))}...` : text;
}

/**
 * The text of anything thrown: a string as is, `String()` of other values (an object's own `toString`
 * counts), arrays and objects whose `String()` fails rendered by `boundedText`; at most `max` characters,
 * never throws.
 *
 * @example
 * thrownText('boom', 100); // 'boom'
 * thrownText(Object.create(null), 100); // '{}'
 */
export function thrownText(value: unknown, max: number): string {
  try {
    if (typeof value === 'string') return clip(value, max);
    // Array.prototype.toString joins recursively: a deep array overflows the stack, a long one is huge.
    if (Array.isArray(value)) return clip(boundedText(value, { maxLength: max }), max);
    return clip(String(value), max);
  } catch {
    return clip(boundedText(value, { maxLength: max }), max);
  }
}

/**
 * The JSON text of a value that came from JSON (a record of an event), whatever its depth: `JSON.stringify`,
 * and where it overflows the stack an iterative writer giving the same text. A value JSON cannot hold (a
 * cycle, a bigint: never in a Lambda event) gives `boundedText` of it. Never throws.
 *
 * @example
 * jsonText({ offset: 1 }); // '{"offset":1}'
 * jsonText(undefined); // 'undefined'
 */
export function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    // RangeError: nested deeper than the stack; TypeError: a cycle or a bigint.
  }
  try {
    return iterativeJson(value);
  } catch {
    return boundedText(value, { maxLength: 100_000 });
  }
}

type Frame =
  | { readonly kind: 'array'; readonly value: readonly unknown[]; index: number }
  | { readonly kind: 'object'; readonly value: Record<string, unknown>; readonly keys: string[]; index: number; wrote: boolean };

/** `JSON.stringify` with an explicit stack instead of recursion; throws a TypeError on a cycle or a bigint. */
function iterativeJson(root: unknown): string {
  const parts: string[] = [];
  const stack: Frame[] = [];
  const open = new Set<object>();
  // Writes a value; returns a frame when it is an array or object whose members are still to write.
  const start = (value: unknown, inArray: boolean): Frame | undefined => {
    if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
      value = (value as { toJSON: () => unknown }).toJSON();
    }
    if (typeof value === 'bigint') throw new TypeError('a bigint has no JSON form');
    if (value === null || typeof value !== 'object') {
      const text = JSON.stringify(value);
      parts.push(text ?? (inArray ? 'null' : ''));
      return undefined;
    }
    if (open.has(value)) throw new TypeError('a cycle has no JSON form');
    open.add(value);
    if (Array.isArray(value)) {
      parts.push('[');
      return { kind: 'array', value, index: 0 };
    }
    parts.push('{');
    return { kind: 'object', value: value as Record<string, unknown>, keys: Object.keys(value), index: 0, wrote: false };
  };
  const first = start(root, false);
  if (first === undefined) return parts.join('') || String(root);
  stack.push(first);
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    let next: Frame | undefined;
    if (frame.kind === 'array') {
      if (frame.index < frame.value.length) {
        if (frame.index > 0) parts.push(',');
        next = start(frame.value[frame.index], true);
        frame.index += 1;
      } else {
        parts.push(']');
        open.delete(frame.value);
        stack.pop();
      }
    } else if (frame.index < frame.keys.length) {
      const key = frame.keys[frame.index]!;
      frame.index += 1;
      const child = frame.value[key];
      if (child === undefined || typeof child === 'function' || typeof child === 'symbol') continue;
      parts.push(`${frame.wrote ? ',' : ''}${JSON.stringify(key)}:`);
      frame.wrote = true;
      next = start(child, false);
    } else {
      parts.push('}');
      open.delete(frame.value);
      stack.pop();
    }
    if (next !== undefined) stack.push(next);
  }
  return parts.join('');
}

/**
 * Whether a value that came from outside (an event, a configuration, a parsed body) is an object with keys: not
 * `null`, not an array.
 *
 * @example
 * isObject({ records: {} }); // true
 * isObject([1]); // false
 */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * An error's message for another error's message: the `message` of anything error-like (duck-typed: an error from
 * another realm, a test runner's sandbox, fails `instanceof Error`), `String()` of anything else.
 *
 * @example
 * messageOf(new Error('refused')); // 'refused'
 * messageOf('timeout'); // 'timeout'
 */
export function messageOf(error: unknown): string {
  return typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string' ? (error as { message: string }).message : String(error);
}
