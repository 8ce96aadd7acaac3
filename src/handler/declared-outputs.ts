import { ConfigError } from '../errors';
import { ENV } from '../options/constants';

/**
 * The output topics the plugin declared (`kafkaLanes.outputs`, as KAFKA_LANES_OUTPUTS): `ctx.send` to any other fails
 * the record, naming it. Unset (a handler used without the plugin): any topic.
 */
export function declaredOutputs(env: Readonly<Record<string, string | undefined>>): ReadonlySet<string> | undefined {
  const listed = env[ENV.outputs]?.split(',').map((topic) => topic.trim()).filter((topic) => topic !== '');
  return listed === undefined || listed.length === 0 ? undefined : new Set(listed);
}

/**
 * Refuses outputs to a topic that is not declared (`undefined`: every topic is).
 *
 * @throws ConfigError naming the declared topics and the stray one.
 * @example
 * checkDeclaredOutputs(new Set(['orders-paid']), [{ topic: 'orders-paid' }]); // passes
 */
export function checkDeclaredOutputs(declared: ReadonlySet<string> | undefined, outputs: readonly { readonly topic: string }[]): void {
  const stray = declared === undefined ? undefined : outputs.find((output) => !declared.has(output.topic));
  if (stray === undefined) return;
  throw new ConfigError(
    `Expected ctx.send to a declared output topic (kafkaLanes.outputs: ${[...declared!].map((topic) => `\`${topic}\``).join(', ')}), got \`${stray.topic}\`: ` +
      "declare it, so that the function's role may write it and the stack creates it",
  );
}
