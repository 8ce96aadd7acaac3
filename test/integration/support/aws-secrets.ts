/**
 * Secrets Manager and SSM for tests: an HTTP server answering `GetSecretValue` and `GetParameter` as AWS's JSON 1.1
 * APIs do, from two tables, recording every call and whether the AWS SDK signed it (SigV4) with the test's static
 * credentials. Point the SDK at it with `endpoint`, or a `lanes()` handler with `awsSecretsEnv(endpoint)`.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export const REGION = 'eu-west-1';
export const CREDENTIALS = { accessKeyId: 'AKIDKAFKALANESTEST', secretAccessKey: 'kafka-lanes-test-only' };

export interface Call {
  readonly target: string;
  readonly body: Record<string, unknown>;
  readonly signed: boolean;
}

/** Secrets Manager and SSM as their JSON 1.1 APIs answer, from two tables; every call recorded. */
export function awsEmulator(secrets: Record<string, string>, parameters: Record<string, string>): { server: Server; calls: Call[] } {
  const calls: Call[] = [];
  const read = (request: IncomingMessage): Promise<string> =>
    new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      request.on('error', reject);
    });
  const server = createServer((request, response) => {
    void read(request).then((text) => {
      const target = String(request.headers['x-amz-target'] ?? '');
      const body = JSON.parse(text === '' ? '{}' : text) as Record<string, unknown>;
      const authorization = String(request.headers['authorization'] ?? '');
      calls.push({ target, body, signed: authorization.startsWith('AWS4-HMAC-SHA256') && authorization.includes(`Credential=${CREDENTIALS.accessKeyId}/`) });
      const answer = (status: number, payload: unknown): void => {
        response.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' });
        response.end(JSON.stringify(payload));
      };
      if (target === 'secretsmanager.GetSecretValue') {
        const id = String(body['SecretId']);
        const value = secrets[id];
        if (value === undefined) return answer(400, { __type: 'ResourceNotFoundException', message: "Secrets Manager can't find the specified secret." });
        return answer(200, { ARN: id, Name: id.split(':').pop(), SecretString: value, VersionId: 'v1', VersionStages: ['AWSCURRENT'], CreatedDate: 1_700_000_000 });
      }
      if (target === 'AmazonSSM.GetParameter') {
        const name = String(body['Name']);
        const value = parameters[name];
        if (value === undefined || body['WithDecryption'] !== true) return answer(400, { __type: 'ParameterNotFound', message: `Parameter ${name} not found.` });
        return answer(200, { Parameter: { Name: name, Type: 'SecureString', Value: value, Version: 1, ARN: `arn:aws:ssm:${REGION}:123456789012:parameter${name}` } });
      }
      return answer(400, { __type: 'UnknownOperationException', message: target });
    });
  });
  return { server, calls };
}

/** Starts `awsEmulator` on a free port of 127.0.0.1. */
export async function startAwsEmulator(secrets: Record<string, string>, parameters: Record<string, string> = {}): Promise<{ endpoint: string; calls: Call[]; close: () => Promise<void> }> {
  const { server, calls } = awsEmulator(secrets, parameters);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { endpoint, calls, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** The environment that makes the AWS SDK of a `lanes()` handler read secrets from the emulator. */
export function awsSecretsEnv(endpoint: string): Record<string, string> {
  return {
    AWS_ENDPOINT_URL_SECRETS_MANAGER: endpoint,
    AWS_ENDPOINT_URL_SSM: endpoint,
    AWS_REGION: REGION,
    AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
  };
}
