import { kafkaLogLine } from '../../../src/connections/kafka-log';

const entry = (label: string, error?: string) => ({
  namespace: 'Connection',
  level: label === 'ERROR' ? 1 : 2,
  label,
  log: { timestamp: '2026-12-06T07:00:00.000Z', message: 'Response FindCoordinator(key: 10, version: 2)', ...(error === undefined ? {} : { error }) },
});

describe('kafkaLogLine', () => {
  it.each([
    "The coordinator is loading and hence can't process requests for this group",
    'The group coordinator is not available',
    'This is not the correct coordinator for this group',
    'There is no leader for this topic-partition as we are in the middle of a leadership election',
    'This server is not the leader for that topic-partition',
  ])('shows a transient %p as a retried warning', (error) => {
    expect(kafkaLogLine(entry('ERROR', error))).toEqual({
      level: 'WARN', timestamp: '2026-12-06T07:00:00.000Z', message: '[Connection] Response FindCoordinator(key: 10, version: 2)', error, retried: true,
    });
  });

  it('keeps any other error an ERROR, as kafkajs prints it', () => {
    expect(kafkaLogLine(entry('ERROR', 'Topic authorization failed'))).toEqual({
      level: 'ERROR', timestamp: '2026-12-06T07:00:00.000Z', message: '[Connection] Response FindCoordinator(key: 10, version: 2)', error: 'Topic authorization failed',
    });
  });
});
