import { resolveConnections } from './connection-options';
import { DEFAULTS } from './constants';
import { withEnvironment } from './environment';
import { OptionsError } from './errors';
import { describeIssue } from './issues';
import type { LanesOptions } from './lanes-options';
import { KNOWN_KEYS, optionsSchema } from './schema';
import { resolvePart } from './standard-schema';
import type { LanesOptionsInput } from './types';

/**
 * Validates the options of `lanes(...)` and fills in every default. Options not given are read from the
 * environment where one is defined (see `LanesOptionsInput`); the environment is read here only, once.
 * Every problem is collected and reported together, one per line, naming the option, where its value came from,
 * what was expected and what was given.
 *
 * @param input The options as the user wrote them (validated as unknown: they may come from JavaScript or YAML).
 * @param env The environment; `process.env` by default.
 * @throws OptionsError (a `ConfigError`) listing every problem.
 * @example
 * const options = resolveOptions({ group: 'orders-svc', retry: { maxAttempts: 3 } });
 * options.retry.tiers; // ['5s', '1m', '10m']
 *
 * resolveOptions({ group: 'orders-svc', concurrency: 0 });
 * // throws: Invalid kafka-lanes option `concurrency`: expected a positive integer, got `0` (number)
 */
export function resolveOptions(input: LanesOptionsInput, env: NodeJS.ProcessEnv = process.env): LanesOptions {
  const filled = withEnvironment(input, env);
  // Parsed once per cold start: zod's JIT would compile a parser for every object schema (`new Function`) to
  // run it once, which costs more at load than the plain parser.
  const result = optionsSchema.safeParse(filled.input, { jitless: true });
  const problems = [...filled.problems];
  if (!result.success) {
    for (const issue of result.error.issues) problems.push(...describeIssue(issue, { input: filled.input, sources: filled.sources, env }, KNOWN_KEYS));
  }
  if (problems.length > 0 || !result.success) throw new OptionsError(problems);

  const { keyOf, kafka, redis, key, value, ...rest } = result.data;
  const connections = resolveConnections(kafka, redis, filled.sources, env);
  if ('problems' in connections) throw new OptionsError(connections.problems);
  const keyPart = resolvePart(key, DEFAULTS.key);
  const valuePart = resolvePart(value, DEFAULTS.value);
  return {
    ...rest,
    ...(keyOf === undefined ? {} : { keyOf }),
    key: keyPart.deserializer,
    value: valuePart.deserializer,
    ...(keyPart.schema === undefined ? {} : { keySchema: keyPart.schema }),
    ...(valuePart.schema === undefined ? {} : { valueSchema: valuePart.schema }),
    kafka: connections.kafka,
    redis: connections.redis,
  };
}
