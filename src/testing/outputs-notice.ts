/**
 * What `testLanes` says on the console about declared outputs, once per process each: that a test has no declaration
 * to check its sends against, and each topic a send was refused for (the record fails and is retried, which a test
 * sees only as a missing output unless it is told why).
 */
import { ConfigError } from '../errors';

const said = new Set<string>();

function sayOnce(key: string, message: string): void {
  if (said.has(key)) return;
  said.add(key);
  console.warn(message);
}

/** What the hand-off recorder tells: a send with nothing declared, a send refused. */
export interface OutputsNotice {
  unchecked(): void;
  refused(error: Error): void;
}

/**
 * The notices of one test: `why` says where no declaration was found, for a test that has none.
 *
 * @example
 * const notice = outputsNotice('orders-svc', 'no serverless.yml in /work/shop');
 * notice.unchecked(); // prints once: kafka-lanes/testing: no output topics declared for group `orders-svc` (...)
 */
export function outputsNotice(group: string, why: string | undefined): OutputsNotice {
  return {
    unchecked: () =>
      sayOnce(
        'unchecked',
        `kafka-lanes/testing: no output topics declared for group \`${group}\` (no \`outputs\` option, no KAFKA_LANES_OUTPUTS in \`env\`, ` +
          `${why ?? 'no service file read'}): ctx.send to any topic is accepted here, where the deployed function may write only the topics of kafkaLanes.outputs`,
      ),
    refused: (error) => {
      if (error instanceof ConfigError) sayOnce(`refused ${error.message}`, `kafka-lanes/testing: a record failed: ${error.message}`);
    },
  };
}
