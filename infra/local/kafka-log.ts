/**
 * The kafkajs log of `npm start`: kafkajs' own JSON lines, except the broker's answers that are expected while
 * topics just created get their leaders. A KRaft broker names a new partition's leader in its metadata a moment
 * before that leader serves it, so `ensureTopics`' readiness probe (ListOffsets, retried until every partition
 * answers) gets "not the leader" answers that kafkajs logs at ERROR level although nothing failed. Only during
 * that window, and only those answers, are counted instead of printed: any other error, or the same answer at
 * any other time, is printed as kafkajs prints it.
 */
import { logLevel, type LogEntry, type logCreator } from 'kafkajs';

/** kafkajs' words for the answers of a broker whose new partitions are getting their leaders. */
export const LEADER_ELECTION_ANSWERS: readonly string[] = [
  'This server is not the leader for that topic-partition', // NOT_LEADER_OR_FOLLOWER
  'This server does not host this topic-partition', // UNKNOWN_TOPIC_OR_PARTITION
  'There is no leader for this topic-partition as we are in the middle of a leadership election', // LEADER_NOT_AVAILABLE
];

/** Whether `entry` is a broker's answer expected while new partitions get their leaders. Pure. */
export function isLeaderElectionAnswer(entry: LogEntry): boolean {
  const error = (entry.log as { error?: unknown }).error;
  return entry.level === logLevel.ERROR && entry.namespace === 'Connection' && entry.log.message.startsWith('Response ') &&
    typeof error === 'string' && LEADER_ELECTION_ANSWERS.includes(error);
}

/** Whether leader elections are expected now (set around topic creation), and how many answers were counted. */
export interface TopicCreationWindow {
  expected: boolean;
  counted: number;
}

/**
 * kafkajs' console logger with the window's expected answers counted instead of printed.
 *
 * @example
 * const window = { expected: false, counted: 0 };
 * const kafka = new Kafka({ brokers, logLevel: logLevel.ERROR, logCreator: quietTopicCreation(window) });
 */
export function quietTopicCreation(window: TopicCreationWindow, write: (level: number, line: string) => void = toConsole): logCreator {
  return () => (entry) => {
    if (window.expected && isLeaderElectionAnswer(entry)) {
      window.counted++;
      return;
    }
    const prefix = entry.namespace ? `[${entry.namespace}] ` : '';
    write(entry.level, JSON.stringify({ level: entry.label, ...entry.log, message: `${prefix}${entry.log.message}` }));
  };
}

function toConsole(level: number, line: string): void {
  if (level === logLevel.ERROR) console.error(line);
  else if (level === logLevel.WARN) console.warn(line);
  else if (level === logLevel.INFO) console.info(line);
  else console.log(line);
}
