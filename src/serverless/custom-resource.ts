import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

// The CloudFormation custom resource protocol, as AWS's CloudFormation user guide documents it ("Custom resource
// request objects", "Custom resource response objects"): the request CloudFormation sends to the function, and the
// answer the function uploads to the request's pre-signed S3 URL. Pure, but for `sendResponse`.

/** A request CloudFormation sends to a custom resource's function (`Create`, `Update` or `Delete`). */
export interface CustomResourceEvent {
  readonly RequestType: 'Create' | 'Update' | 'Delete';
  readonly ServiceToken?: string;
  /** A pre-signed S3 URL the answer is uploaded to (HTTPS PUT). */
  readonly ResponseURL: string;
  readonly StackId: string;
  readonly RequestId: string;
  readonly ResourceType: string;
  readonly LogicalResourceId: string;
  /** On `Update` and `Delete`: what the `Create` (or the last `Update`) answered. */
  readonly PhysicalResourceId?: string;
  /** The resource's `Properties` in the template; CloudFormation passes every scalar as a string. */
  readonly ResourceProperties: Readonly<Record<string, unknown>>;
  /** On `Update`: the properties before. */
  readonly OldResourceProperties?: Readonly<Record<string, unknown>>;
}

/** What the function answers. */
export interface CustomResourceOutcome {
  readonly status: 'SUCCESS' | 'FAILED';
  /** Stable for the life of the resource: a different one on `Update` makes CloudFormation delete the old one. */
  readonly physicalResourceId: string;
  /** Why it failed, for the user reading the stack's events. */
  readonly reason?: string;
  /** Values `Fn::GetAtt` reads from the resource. */
  readonly data?: Readonly<Record<string, string>>;
}

/** AWS: "The total size of the response body can't exceed 4096 bytes." */
export const RESPONSE_MAX_BYTES = 4096;
/** AWS: a `PhysicalResourceId` "can be up to 1 KB in size". */
export const PHYSICAL_ID_MAX_BYTES = 1024;

/**
 * The JSON body of an answer, at most 4,096 bytes: a reason too long is cut (its end marked), and an answer whose
 * data alone would not fit fails, saying so (`Fn::GetAtt` would read a truncated value otherwise).
 *
 * @example
 * responseBody(event, { status: 'FAILED', physicalResourceId: 'kafka-lanes-topics:orders', reason: 'orders.dlq: TOPIC_AUTHORIZATION_FAILED' });
 */
export function responseBody(event: CustomResourceEvent, outcome: CustomResourceOutcome): string {
  const id = outcome.physicalResourceId;
  if (id === '' || Buffer.byteLength(id) > PHYSICAL_ID_MAX_BYTES) {
    throw new RangeError(`Expected a PhysicalResourceId of 1 to ${PHYSICAL_ID_MAX_BYTES} bytes, got ${Buffer.byteLength(id)}`);
  }
  const body = (reason: string | undefined, data: CustomResourceOutcome['data']): string =>
    JSON.stringify({
      Status: outcome.status,
      ...(reason === undefined ? {} : { Reason: reason }),
      PhysicalResourceId: id,
      StackId: event.StackId,
      RequestId: event.RequestId,
      LogicalResourceId: event.LogicalResourceId,
      ...(data === undefined ? {} : { Data: data }),
    });
  const whole = body(outcome.reason, outcome.data);
  if (Buffer.byteLength(whole) <= RESPONSE_MAX_BYTES) return whole;
  if (Buffer.byteLength(body('', outcome.data)) > RESPONSE_MAX_BYTES) {
    return responseBody(event, {
      status: 'FAILED',
      physicalResourceId: id,
      reason: `the answer's data is over CloudFormation's ${RESPONSE_MAX_BYTES} bytes (${Object.keys(outcome.data ?? {}).join(', ')})`,
    });
  }
  // The longest head of the reason that fits with its end marked (JSON escapes and UTF-8 make bytes and characters differ).
  const marker = ' [...]';
  const reasonText = outcome.reason ?? '';
  let low = 0;
  let high = reasonText.length;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (Buffer.byteLength(body(reasonText.slice(0, middle) + marker, outcome.data)) <= RESPONSE_MAX_BYTES) low = middle;
    else high = middle - 1;
  }
  const reason = reasonText.slice(0, low);
  return body(reason + marker, outcome.data);
}

/** Loopback hosts, the only ones an answer may go to over plain HTTP (a test's stand-in for S3). */
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/**
 * Uploads an answer to the request's pre-signed URL as AWS documents it: an HTTPS PUT whose `Content-Type` is empty
 * (the URL is signed without one: any other value breaks the signature) and whose `Content-Length` is set. A
 * network error or a 5xx is tried again (three attempts); S3's refusal (4xx) is thrown at once.
 *
 * Plain HTTP is accepted for a loopback address only: CloudFormation's URL is always HTTPS to S3, and a test
 * answers to a local server with the very code that answers S3.
 *
 * @example
 * await sendResponse(event.ResponseURL, responseBody(event, outcome));
 */
export async function sendResponse(responseUrl: string, body: string, attempts = 3): Promise<void> {
  const url = new URL(responseUrl);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK.has(url.hostname))) {
    throw new RangeError(`Expected an https:// ResponseURL (a pre-signed S3 URL), got ${url.protocol}//${url.host}`);
  }
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  for (let attempt = 1; ; attempt++) {
    const status = await new Promise<number>((resolve, reject) => {
      const request = send(url, { method: 'PUT', headers: { 'content-type': '', 'content-length': Buffer.byteLength(body) }, timeout: 30_000 }, (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
        response.on('error', reject);
      });
      request.on('timeout', () => request.destroy(new Error(`no answer from ${url.host} within 30 s`)));
      request.on('error', reject);
      request.end(body);
    }).catch((error: unknown) => {
      if (attempt >= attempts) throw error;
      return 0;
    });
    if (status >= 200 && status < 300) return;
    if ((status >= 400 && status < 500) || attempt >= attempts) {
      throw new Error(`The ResponseURL's host ${url.host} answered HTTP ${status} to the custom resource's answer`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
  }
}
