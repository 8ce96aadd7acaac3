import { parseEnv } from 'node:util';
import { ConfigError } from '../errors';

/** The variables a deployed function is configured by; everything else in a file is ignored. */
const PREFIX = 'KAFKA_LANES_';

/**
 * The `KAFKA_LANES_*` environment of a deployed function, from a file the operator saved: the JSON that
 * `aws lambda get-function-configuration --function-name <fn>` prints (`Environment.Variables`), a flat JSON
 * object of names to values, or `NAME=value` lines (a dotenv file).
 *
 * @example
 * deployedEnvironment('{"Environment":{"Variables":{"KAFKA_LANES_BROKERS":"b-1:9098"}}}', 'fn.json');
 * // { KAFKA_LANES_BROKERS: 'b-1:9098' }
 * @throws ConfigError when the file holds no `KAFKA_LANES_*` variable.
 */
export function deployedEnvironment(text: string, path: string): Record<string, string> {
  let all: Record<string, unknown>;
  const trimmed = text.trim();
  if (trimmed.startsWith('{')) {
    let parsed: { Environment?: { Variables?: Record<string, unknown> } } & Record<string, unknown>;
    try {
      parsed = JSON.parse(trimmed) as typeof parsed;
    } catch (error) {
      throw new ConfigError(`Expected JSON in ${path} (it starts with \`{\`), got: ${(error as Error).message}`);
    }
    all = parsed.Environment?.Variables ?? parsed;
  } else {
    all = parseEnv(text);
  }
  const found = Object.fromEntries(Object.entries(all).filter((entry): entry is [string, string] => entry[0].startsWith(PREFIX) && typeof entry[1] === 'string'));
  if (Object.keys(found).length === 0) {
    throw new ConfigError(
      `Expected ${PREFIX}* variables in ${path} (the JSON of \`aws lambda get-function-configuration\`, a JSON object or NAME=value lines), found none`,
    );
  }
  return found;
}

/**
 * The environment a command reads with a deployed function's variables: the shell's, with its own `KAFKA_LANES_*`
 * variables replaced by `deployed` (a variable only the shell sets would describe another deployment), and its
 * other variables (`AWS_REGION`, credentials for MSK IAM) kept.
 */
export function withDeployedEnvironment(shell: NodeJS.ProcessEnv, deployed: Readonly<Record<string, string>>): NodeJS.ProcessEnv {
  return { ...Object.fromEntries(Object.entries(shell).filter(([name]) => !name.startsWith(PREFIX))), ...deployed };
}
