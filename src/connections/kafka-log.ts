import type { LogEntry, logCreator } from 'kafkajs';

/**
 * Errors a broker answers while a coordinator or a partition leader moves (a new broker, a restart, the first
 * idempotent producer of a cluster): kafkajs logs the response at ERROR, then retries it, and the call succeeds.
 * Kafka's own retriable error codes COORDINATOR_LOAD_IN_PROGRESS (14), COORDINATOR_NOT_AVAILABLE (15), NOT_COORDINATOR (16),
 * LEADER_NOT_AVAILABLE (5), NOT_LEADER_OR_FOLLOWER (6), FENCED_LEADER_EPOCH (74) and UNKNOWN_LEADER_EPOCH (75), as kafkajs
 * words them (its protocol/error.js).
 */
const TRANSIENT =
  /coordinator is loading|coordinator is not available|not the correct coordinator|no leader for this topic-partition|not the leader for that topic-partition|leader epoch in the request is (?:older|newer) than the epoch on the broker/i;

/** The line kafkajs's console logger would print, as a record: its level name, timestamp, message and fields. */
export type KafkaLogLine = Record<string, unknown> & { readonly level: string; readonly message: string };

/**
 * The entry as the line to print: kafkajs's own JSON, but an ERROR that only says a coordinator or a leader is
 * moving is a WARN marked `retried: true` (kafkajs retries it; a failure that outlasts the retries is an error of
 * the call, reported where the call fails).
 *
 * @example
 * kafkaLogLine({ namespace: 'Connection', level: 1, label: 'ERROR', log: { timestamp: 't', message: 'Response FindCoordinator', error: "The coordinator is loading and hence can't process requests" } });
 * // { level: 'WARN', timestamp: 't', message: '[Connection] Response FindCoordinator', error: '...', retried: true }
 */
export function kafkaLogLine({ namespace, label, log }: LogEntry): KafkaLogLine {
  const error: unknown = log['error'];
  const retried = label === 'ERROR' && typeof error === 'string' && TRANSIENT.test(error);
  return { ...log, level: retried ? 'WARN' : label, message: `${namespace === '' ? '' : `[${namespace}] `}${log.message}`, ...(retried ? { retried: true } : {}) };
}

/**
 * kafkajs's console logger with transient coordinator and leader errors shown as retried warnings (`kafkaLogLine`):
 * the logger of every kafkajs client the framework makes that logs at all (the hand-off and output client, the
 * committer's, the offline trigger's consumers); the others (the CLI's, the topics worker's, the produce function's)
 * log nothing (`logLevel.NOTHING`) and report failures themselves.
 *
 * @example
 * const kafka = new Kafka({ brokers, logLevel: logLevel.ERROR, logCreator: kafkaLogCreator });
 */
export const kafkaLogCreator: logCreator = () => (entry) => {
  const line = kafkaLogLine(entry);
  const text = JSON.stringify(line);
  if (line.level === 'ERROR') console.error(text);
  else if (line.level === 'WARN') console.warn(text);
  else if (line.level === 'INFO') console.info(text);
  else console.log(text);
};
