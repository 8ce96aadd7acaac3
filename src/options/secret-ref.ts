/**
 * A reference to a secret kept outside the function's configuration: a Secrets Manager secret (its ARN or name)
 * or an SSM SecureString parameter (`ssm:/path/name` or its ARN). Only the reference travels in options and
 * environment variables; the value is read at cold start (src/connections/secrets.ts). Pure.
 */
export type SecretRef =
  | { readonly store: 'secretsmanager'; readonly id: string; readonly region?: string }
  | { readonly store: 'ssm'; readonly name: string; readonly region?: string };

export type SecretStore = SecretRef['store'];

const ARN = /^arn:(aws[a-z-]*):([a-z0-9-]+):([a-z0-9-]*):([0-9]*):(.*)$/;
// Secrets Manager secret names: letters, digits and /_+=.@- (its CreateSecret `Name`).
const SECRET_NAME = /^[A-Za-z0-9/_+=.@-]{1,512}$/;
// SSM parameter names: letters, digits and ._-/ (its PutParameter `Name`), at most 1,011 characters with the path.
const PARAMETER_NAME = /^[A-Za-z0-9._/-]{1,1011}$/;

/** What a secret setting expects, for messages. */
export function secretRefExpected(stores: readonly SecretStore[]): string {
  const secret = 'a Secrets Manager secret (its ARN or name)';
  return stores.includes('ssm') ? `${secret} or an SSM SecureString parameter (\`ssm:/path/name\` or its ARN)` : secret;
}

/**
 * The secret a reference names, or why it names none of the stores allowed (to follow `secretRefExpected`).
 *
 * @example
 * parseSecretRef('ssm:/shop/redis-token'); // { store: 'ssm', name: '/shop/redis-token' }
 * parseSecretRef('arn:aws:secretsmanager:eu-west-1:123456789012:secret:shop-kafka-AbCdEf');
 * // { store: 'secretsmanager', id: 'arn:aws:...', region: 'eu-west-1' }
 */
export function parseSecretRef(text: string, stores: readonly SecretStore[] = ['secretsmanager', 'ssm']): SecretRef | { problem: string } {
  const ref = parseAny(text.trim());
  if ('problem' in ref) return ref;
  if (!stores.includes(ref.store)) return { problem: 'an SSM parameter; this setting reads Secrets Manager only' };
  return ref;
}

function parseAny(text: string): SecretRef | { problem: string } {
  if (text === '') return { problem: 'empty' };
  if (text.startsWith('ssm:')) {
    const name = text.slice('ssm:'.length);
    if (name.startsWith('arn:')) return parseArn(name);
    return PARAMETER_NAME.test(name) ? { store: 'ssm', name } : { problem: 'an SSM parameter name holds letters, digits and `._-/` only' };
  }
  if (text.startsWith('arn:')) return parseArn(text);
  return SECRET_NAME.test(text) ? { store: 'secretsmanager', id: text } : { problem: 'a secret name holds letters, digits and `/_+=.@-` only' };
}

function parseArn(text: string): SecretRef | { problem: string } {
  const match = ARN.exec(text);
  if (match === null) return { problem: 'not an ARN `arn:<partition>:<service>:<region>:<account>:<resource>`' };
  const [, , service, region, , resource] = match as unknown as [string, string, string, string, string, string];
  const inRegion = region === '' ? {} : { region };
  if (service === 'secretsmanager' && resource.startsWith('secret:') && resource.length > 'secret:'.length) {
    return { store: 'secretsmanager', id: text, ...inRegion };
  }
  if (service === 'ssm' && resource.startsWith('parameter/') && resource.length > 'parameter/'.length) {
    // GetParameter takes the ARN itself as the parameter's name.
    return { store: 'ssm', name: text, ...inRegion };
  }
  return { problem: `an ARN of \`${service}\` \`${resource.split(/[:/]/)[0] ?? ''}\`` };
}

/** The reference as the environment carries it: `ssm:` marks a parameter given by name. */
export function formatSecretRef(ref: SecretRef): string {
  if (ref.store === 'secretsmanager') return ref.id;
  return ref.name.startsWith('arn:') ? ref.name : `ssm:${ref.name}`;
}
