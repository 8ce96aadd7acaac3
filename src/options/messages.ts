import { describeValue } from '../errors';

/** A path inside the options, as users write it: `retry.tiers[1]`; the empty path is the options object. */
export function optionPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((text, key) => {
    if (typeof key === 'number') return `${text}[${key}]`;
    const name = String(key);
    return text === '' ? name : `${text}.${name}`;
  }, '');
}

/**
 * `1000000` as `1,000,000`, what `toLocaleString('en-US')` gives for an integer, without it: the first
 * `toLocaleString` of a process loads ICU's locale data, ~40 ms of a cold start, and the option schema is built at load.
 */
export function groupThousands(value: number): string {
  // A loop, not a look-ahead regular expression: compiling one at load costs more than this whole function.
  const digits = String(value);
  let grouped = '';
  for (let index = 0; index < digits.length; index += 1) {
    if (index > 0 && (digits.length - index) % 3 === 0) grouped += ',';
    grouped += digits[index];
  }
  return grouped;
}

/** Where a value came from, for messages: the environment variable, when it was read from one. */
export function fromEnvironment(variable: string | undefined): string {
  return variable === undefined ? '' : ` (from environment variable \`${variable}\`)`;
}

/**
 * A value as a message shows it, like `describeValue` but with secrets hidden (SASL password, the password in a
 * Redis URL) and non-finite numbers shown as they are (JSON would show `null`).
 */
export function describeGiven(path: string, value: unknown): string {
  if ((path === 'kafka.sasl.password' || path === 'redis.password') && value !== undefined && value !== '') return `\`***\` (${value === null ? 'null' : typeof value})`;
  if (typeof value === 'number' && !Number.isFinite(value)) return `\`${String(value)}\` (number)`;
  if (path === 'redis.url' && typeof value === 'string') return describeValue(value.replace(/^([a-z][a-z0-9+.-]*:\/\/)?[^/]*@/i, '$1***@'));
  return describeValue(value);
}

/**
 * ``Invalid kafka-lanes option `concurrency`: expected a positive integer, got `0` (number)``, with the environment
 * variable the value came from (`variable`) and what more there is to say (`note`).
 */
export function invalidOption(path: string, expected: string, given: string, { variable, note }: { variable?: string; note?: string } = {}): string {
  const subject = path === '' ? 'Invalid kafka-lanes options' : `Invalid kafka-lanes option \`${path}\``;
  return `${subject}${fromEnvironment(variable)}: expected ${expected}, got ${given}${note === undefined ? '' : `: ${note}`}`;
}
