/**
 * Copies as the previous release wrote them: its framework facts one header per fact (`lanes-origin-topic`,
 * `lanes-attempt`, ...), before `lanes-copy` carried them in one. A fleet mid-upgrade has such copies waiting in its
 * retry topics and such dead letters in its dead-letter topic; the tests write them to the broker and check that
 * this release reads them. The header writing below is the previous release's `handOffMessage`, unchanged.
 */
import type { HandOffHeaders } from '../../../src/handoff';
import type { KafkaRecordInput } from '../../../src/event';

/** The framework headers the previous release wrote for these facts, in its order. */
export function previousReleaseHeaders(facts: HandOffHeaders): Record<string, string> {
  const headers: Record<string, string> = {};
  const put = (name: string, value: string | number | undefined): void => {
    if (value !== undefined) headers[name] = String(value);
  };
  put('lanes-origin-topic', facts.originTopic);
  put('lanes-origin-partition', facts.originPartition);
  put('lanes-origin-offset', facts.originOffset);
  put('lanes-origin-timestamp', facts.originTimestamp);
  put('lanes-lane', facts.lane);
  put('lanes-kind', facts.kind);
  put('lanes-attempt', facts.attempt);
  put('lanes-due-at', facts.dueAtMs);
  put('lanes-first-failure-at', facts.firstFailureAtMs);
  put('lanes-error-class', facts.errorName);
  put('lanes-error-message', facts.errorMessage);
  put('lanes-dead-letter-reason', facts.reason);
  if (facts.deferred === true) put('lanes-deferred', 'true');
  return headers;
}

/** A record's own headers (not the framework's), as a producer takes them. */
export function ownHeaders(record: KafkaRecordInput): Record<string, Buffer> {
  return Object.fromEntries((record.headers ?? []).filter((h) => !h.name.startsWith('lanes-')).map((h) => [h.name, Buffer.from(h.value)]));
}
