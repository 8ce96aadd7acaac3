import { ConfigError } from '../errors';
import { ENV } from '../options/constants';

/**
 * The output topics the plugin declared (`kafkaLanes.outputs`, as KAFKA_LANES_OUTPUTS): `ctx.send` to any other fails
 * the record, naming it. Set but empty (the plugin's block declares none): every `ctx.send` fails, as MSK IAM refuses
 * a write the role is not granted. Unset (a handler used without the plugin): any topic.
 */
export function declaredOutputs(env: Readonly<Record<string, string | undefined>>): ReadonlySet<string> | undefined {
  const listed = env[ENV.outputs]?.split(',').map((topic) => topic.trim()).filter((topic) => topic !== '');
  return listed === undefined ? undefined : new Set(listed);
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
  const listed = declared!.size === 0 ? 'none declared' : [...declared!].map((topic) => `\`${topic}\``).join(', ');
  throw new ConfigError(
    `Expected ctx.send to a declared output topic (kafkaLanes.outputs: ${listed}), got \`${stray.topic}\`: ` +
      "declare it, so that the function's role may write it and the stack creates it",
  );
}

/**
 * Sends the outputs of records finishing together (one list per record) through `send`, except a record with an
 * output to a topic that is not declared: it fails alone, with `checkDeclaredOutputs`' error; one outcome per record.
 *
 * @example
 * await sendDeclared(new Set(['paid']), [[{ topic: 'paid' }], [{ topic: 'typo' }]], send); // [undefined, ConfigError]
 */
export async function sendDeclared<O extends { readonly topic: string }>(
  declared: ReadonlySet<string> | undefined,
  records: ReadonlyArray<readonly O[]>,
  send: (records: ReadonlyArray<readonly O[]>) => Promise<ReadonlyArray<Error | undefined>>,
): Promise<ReadonlyArray<Error | undefined>> {
  if (declared === undefined) return send(records);
  const refusals = records.map((outputs): Error | undefined => {
    try {
      checkDeclaredOutputs(declared, outputs);
      return undefined;
    } catch (error) {
      return error as Error;
    }
  });
  if (refusals.every((refusal) => refusal === undefined)) return send(records);
  const declaredOnes = records.filter((_, i) => refusals[i] === undefined);
  const sent = declaredOnes.length === 0 ? [] : await send(declaredOnes);
  let next = 0;
  return refusals.map((refusal) => refusal ?? sent[next++]);
}
