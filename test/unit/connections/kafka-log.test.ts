import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { kafkaLogLine } from '../../../src/connections/kafka-log';
import { SRC, sourceFiles } from '../structure/source-tree';

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
    'The leader epoch in the request is older than the epoch on the broker',
    'The leader epoch in the request is newer than the epoch on the broker',
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

describe("the framework's kafkajs clients", () => {
  /** Every `new Kafka({...})` under src/: where it is, its log level and its logger, as written. */
  const clients = sourceFiles().flatMap((file) => {
    const source = ts.createSourceFile(file, readFileSync(join(SRC, file), 'utf8'), ts.ScriptTarget.ES2022, true);
    const found: Array<{ at: string; logLevel?: string; logCreator?: string }> = [];
    const visit = (node: ts.Node): void => {
      if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'Kafka') {
        const [config] = node.arguments ?? [];
        const property = (name: string): string | undefined =>
          config !== undefined && ts.isObjectLiteralExpression(config)
            ? config.properties.find((p): p is ts.PropertyAssignment => ts.isPropertyAssignment(p) && p.name.getText(source) === name)?.initializer.getText(source)
            : undefined;
        const logLevel = property('logLevel');
        const logCreator = property('logCreator');
        found.push({ at: `${file}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`, ...(logLevel === undefined ? {} : { logLevel }), ...(logCreator === undefined ? {} : { logCreator }) });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
    return found;
  });

  it('log nothing or log through kafkaLogCreator: none prints a coordinator or leader move as an ERROR', () => {
    // The clients that log: the hand-off and output client, the committer's, the offline trigger's, the seam's.
    expect(clients.filter((client) => client.logCreator !== undefined).map((client) => client.at.replace(/:\d+$/, ''))).toEqual(
      expect.arrayContaining(['connections/kafka-client.ts', 'handler/lanes.ts', 'serverless/committer-handler.ts', 'serverless/offline/trigger.ts']),
    );
    expect(clients.filter((client) => client.logLevel !== 'logLevel.NOTHING' && client.logCreator !== 'kafkaLogCreator')).toEqual([]);
  });
});
