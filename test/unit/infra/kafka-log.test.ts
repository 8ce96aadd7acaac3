import { logLevel, type LogEntry } from 'kafkajs';
import { isLeaderElectionAnswer, LEADER_ELECTION_ANSWERS, quietTopicCreation } from '../../../infra/local/kafka-log';

// kafkajs' table of Kafka's error codes, where its log lines take their words from.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { createErrorFromCode } = require('kafkajs/src/protocol/error') as { createErrorFromCode(code: number): { message: string } };

const response = (error: string, level: number = logLevel.ERROR): LogEntry => ({
  namespace: 'Connection',
  level,
  label: level === logLevel.ERROR ? 'ERROR' : 'WARN',
  log: { timestamp: '2026-12-03T21:48:43.780Z', logger: 'kafkajs', message: 'Response ListOffsets(key: 2, version: 3)', error, correlationId: 32, size: 169 } as LogEntry['log'],
});

describe('the kafkajs log of npm start', () => {
  it("names the broker's leader-election answers in kafkajs' own words (codes 6, 3 and 5)", () => {
    expect(LEADER_ELECTION_ANSWERS).toEqual([6, 3, 5].map((code) => createErrorFromCode(code).message));
  });

  it('counts the leader-election answers while topics are being created, and prints them at any other time', () => {
    // Prepare
    const printed: string[] = [];
    const window = { expected: true, counted: 0 };
    const log = quietTopicCreation(window, (_level, line) => printed.push(line))(logLevel.ERROR);

    // Act
    log(response('This server is not the leader for that topic-partition'));
    log(response('This server does not host this topic-partition'));
    window.expected = false;
    log(response('This server is not the leader for that topic-partition'));

    // Assess
    expect(window.counted).toBe(2);
    expect(printed.map((line) => JSON.parse(line) as { level: string; message: string; error: string })).toEqual([
      expect.objectContaining({ level: 'ERROR', message: '[Connection] Response ListOffsets(key: 2, version: 3)', error: 'This server is not the leader for that topic-partition' }),
    ]);
  });

  it('prints every other error while topics are being created', () => {
    // Prepare
    const printed: string[] = [];
    const window = { expected: true, counted: 0 };
    const log = quietTopicCreation(window, (_level, line) => printed.push(line))(logLevel.ERROR);
    const other: LogEntry = { ...response('This server is not the leader for that topic-partition'), namespace: 'Producer' };

    // Act
    log(response('Topic authorization failed'));
    log(other);

    // Assess
    expect(window.counted).toBe(0);
    expect(printed).toHaveLength(2);
    expect(isLeaderElectionAnswer(other)).toBe(false);
  });
});
