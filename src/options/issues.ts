/** What an options problem says: the option, where its value came from, what was expected and what was given. */
import type * as z from 'zod/mini';
import { isObject } from '../describe';
import { ENV } from './constants';
import { describeGiven, invalidOption, optionPath } from './messages';
import { didYouMean } from './suggest';

/** The keys each options object may hold (by dotted path, '' for the root) and the misspellings we name. */
export interface KnownKeys {
  readonly aliases: Readonly<Record<string, string>>;
  readonly byObject: Readonly<Record<string, readonly string[]>>;
  /** The keys of each backoff type (`retry.backoff` holds one or the other). */
  readonly backoff: { readonly tiers: readonly string[]; readonly fixed: readonly string[]; readonly exponential: readonly string[] };
}

/** Where the options came from: as given (the environment's values filled in), each value's variable, the environment. */
export interface OptionsGiven {
  readonly input: unknown;
  readonly sources: ReadonlyMap<string, string>;
  readonly env: NodeJS.ProcessEnv;
}

export function describeIssue(issue: z.core.$ZodIssue, { input, sources, env }: OptionsGiven, keys: KnownKeys): string[] {
  if (issue.code === 'unrecognized_keys') return issue.keys.map((key) => unknownKey(issue.path, key, input, keys));

  const path = optionPath(issue.path);
  const given = valueAt(input, issue.path);
  if (path === 'group' && given === undefined) {
    const empty = env[ENV.group] === '' ? ` (\`${ENV.group}\` is set but empty)` : '';
    return [
      `Missing kafka-lanes option \`group\`: expected the Kafka consumer group id of the event source, in the option ` +
        `\`group\` or the environment variable \`${ENV.group}\`${empty}; a Kafka trigger event does not carry it`,
    ];
  }
  const note: unknown = issue.code === 'custom' ? issue.params?.['note'] : undefined;
  return [invalidOption(path, issue.message, describeGiven(path, given), { variable: sourceOf(path, sources), note: typeof note === 'string' ? note : undefined })];
}

function unknownKey(objectPath: readonly PropertyKey[], key: string, input: unknown, keys: KnownKeys): string {
  const where = optionPath(objectPath);
  const name = optionPath([...objectPath, key]);
  const siblings = knownKeysAt(where, input, keys);
  if (where === 'retry.backoff') {
    const type = backoffType(input);
    const other = (['fixed', 'exponential'] as const).find((candidate) => candidate !== type && keys.backoff[candidate].includes(key));
    if (other !== undefined) return `Unknown kafka-lanes option \`${name}\`: it applies to \`type: '${other}'\` only, this backoff is \`${type}\``;
  }
  // kafkajs says `ssl`, ioredis says `tls`: each object keeps its library's word, so the other one is a likely slip.
  const alias = keys.aliases[name];
  if (alias !== undefined) return `Unknown kafka-lanes option \`${name}\`: did you mean \`${alias}\`?`;
  const sibling = didYouMean(key, siblings);
  if (sibling !== undefined) return `Unknown kafka-lanes option \`${name}\`: did you mean \`${optionPath([...objectPath, sibling])}\`?`;
  // A key at the wrong level (`maxAttempts` instead of `retry.maxAttempts`).
  const elsewhere = Object.entries(keys.byObject)
    .filter(([path]) => path !== where)
    .flatMap(([path, names]) => names.map((known) => (path === '' ? known : `${path}.${known}`)));
  const leaves = elsewhere.map((path) => path.slice(path.lastIndexOf('.') + 1));
  const leaf = didYouMean(key, leaves);
  const match = leaf === undefined ? undefined : elsewhere[leaves.indexOf(leaf)];
  if (match !== undefined) return `Unknown kafka-lanes option \`${name}\`: did you mean \`${match}\`?`;
  return `Unknown kafka-lanes option \`${name}\`: expected one of ${siblings.map((known) => `\`${known}\``).join(', ')}`;
}

function knownKeysAt(where: string, input: unknown, keys: KnownKeys): readonly string[] {
  if (where !== 'retry.backoff') return keys.byObject[where] ?? [];
  return keys.backoff[backoffType(input)];
}

function backoffType(input: unknown): 'tiers' | 'fixed' | 'exponential' {
  const type = valueAt(input, ['retry', 'backoff', 'type']);
  return type === 'tiers' || type === 'fixed' ? type : 'exponential';
}

/** The environment variable a value at `path` came from, if it came from one. */
export function sourceOf(path: string, sources: ReadonlyMap<string, string>): string | undefined {
  for (const [prefix, variable] of sources) {
    if (path === prefix || path.startsWith(`${prefix}.`) || path.startsWith(`${prefix}[`)) return variable;
  }
  return undefined;
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (!isObject(value) && !Array.isArray(value)) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/**
 * Whether an issue concerns the value at `path` (relative to the object being checked): an issue at it, under it,
 * or at one of its parents. Unknown keys concern no value.
 */
export function touches(
  issues: readonly { readonly code?: string; readonly path?: readonly PropertyKey[] | undefined }[],
  path: readonly PropertyKey[],
): boolean {
  return issues.some((issue) => {
    if (issue.code === 'unrecognized_keys') return false;
    const at = issue.path ?? [];
    const shorter = Math.min(at.length, path.length);
    return at.slice(0, shorter).every((key, index) => key === path[index]);
  });
}
