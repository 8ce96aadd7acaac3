import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CustomResourceEvent } from '../../../src/serverless/custom-resource';

/** One upload to the stand-in for CloudFormation's pre-signed S3 URL. */
export interface ReceivedAnswer {
  readonly method: string | undefined;
  readonly path: string | undefined;
  readonly headers: IncomingHttpHeaders;
  readonly raw: string;
  readonly body: Record<string, unknown>;
}

/**
 * A local HTTP server standing in for the ResponseURL of a custom resource request: it keeps every upload. Plain HTTP
 * on the loopback address, which `sendResponse` accepts for loopback only (the code path is the one that answers S3).
 */
export async function startResponseServer(): Promise<{ url(path: string): string; answers: ReceivedAnswer[]; close(): Promise<void> }> {
  const answers: ReceivedAnswer[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      answers.push({ method: request.method, path: request.url, headers: request.headers, raw, body: JSON.parse(raw) as Record<string, unknown> });
      response.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    answers,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A CloudFormation-shaped request of the topics resource (as AWS's "Custom resource request objects" show them). */
export function resourceEvent(
  requestType: CustomResourceEvent['RequestType'],
  responseUrl: string,
  properties: Record<string, unknown>,
  extra: Partial<CustomResourceEvent> = {},
): CustomResourceEvent {
  return {
    RequestType: requestType,
    ServiceToken: 'arn:aws:lambda:eu-west-1:123456789012:function:shop-dev-ordersTopics',
    ResponseURL: responseUrl,
    StackId: 'arn:aws:cloudformation:eu-west-1:123456789012:stack/shop-dev/5b6e2f00-0000-11ef-8000-0a1b2c3d4e5f',
    RequestId: `request-${Math.random().toString(16).slice(2)}`,
    ResourceType: 'Custom::KafkaLanesTopics',
    LogicalResourceId: 'OrdersKafkaLanesTopics',
    ResourceProperties: { ServiceToken: 'arn:aws:lambda:eu-west-1:123456789012:function:shop-dev-ordersTopics', ...properties },
    ...extra,
  };
}
