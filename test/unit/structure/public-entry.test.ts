import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { SRC } from './source-tree';

/** Every name a module's `export { ... } from` lines publish, values and types alike. */
function exportedNames(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(join(SRC, file), 'utf8'), ts.ScriptTarget.ES2022);
  return source.statements.flatMap((statement) =>
    ts.isExportDeclaration(statement) && statement.exportClause !== undefined && ts.isNamedExports(statement.exportClause)
      ? statement.exportClause.elements.map((element) => element.name.text)
      : []).sort();
}

describe('the public entry, kafka-lanes', () => {
  it('exports what a handler author uses, and only that: a new name is a deliberate change of this list', () => {
    expect(exportedNames('index.ts')).toEqual([
      'Backoff',
      'BackoffInput',
      'ConfigError',
      'ConfluentRegistryConfig',
      'DeadlineError',
      'DeserializationError',
      'Deserializer',
      'DeserializerFn',
      'EventRecordFormat',
      'GlueSchemaSource',
      'KafkaBatchResponse',
      'KafkaHeader',
      'KafkaOptions',
      'KafkaOptionsInput',
      'KeyOf',
      'LanesContext',
      'LanesError',
      'LanesHandler',
      'LanesMiddleware',
      'LanesOptions',
      'LanesOptionsInput',
      'LanesRecord',
      'LanesRequest',
      'NonRetriableError',
      'Ordering',
      'OutputRecord',
      'RecordHandler',
      'RecordPartOf',
      'RecordTimeoutError',
      'RedisOptions',
      'RedisOptionsInput',
      'RegistryDeserializer',
      'RegistryFormatOptions',
      'RetryLaterError',
      'RetryOptions',
      'RetryOptionsInput',
      'SaslInput',
      'SchemaFormat',
      'SchemaRegistryUnavailableError',
      'SchemaValidationError',
      'StandardSchemaV1',
      'StepNameError',
      'StepResultTooLargeError',
      'StepSerializer',
      'avro',
      'idempotencyCacheClient',
      'jsonSchema',
      'lanes',
      'protobuf',
    ]);
  });

  it('has at run time exactly the values of that list', async () => {
    const entry = await import('../../../src');
    expect(Object.keys(entry).sort()).toEqual([
      'ConfigError',
      'DeadlineError',
      'DeserializationError',
      'LanesError',
      'NonRetriableError',
      'RecordTimeoutError',
      'RetryLaterError',
      'SchemaRegistryUnavailableError',
      'SchemaValidationError',
      'StepNameError',
      'StepResultTooLargeError',
      'avro',
      'idempotencyCacheClient',
      'jsonSchema',
      'lanes',
      'protobuf',
    ]);
  });

  it('loads no part of the engine at import: the engine, the scheduler, the record paths and the registry reader come at the first invocation', async () => {
    const loaded: string[] = [];
    await jest.isolateModulesAsync(async () => {
      for (const module of ['engine/engine', 'engine/scheduler', 'source/source-path', 'retry/retry-path', 'handler/lanes-function', 'registry/reader', 'registry/codecs']) {
        jest.doMock(`../../../src/${module}`, () => {
          loaded.push(module);
          return jest.requireActual(`../../../src/${module}`);
        });
      }
      await import('../../../src');
    });
    expect(loaded).toEqual([]);
  });
});

describe('the operator entry, kafka-lanes/operator', () => {
  it('exports what an operator\'s script needs to do what the CLI and the dashboard do, and only that: a new name is a deliberate change of this list', () => {
    expect(exportedNames('operator.ts')).toEqual([
      'CompletionStore',
      'DashboardOptions',
      'DeadLetter',
      'EnsureTopicsOptions',
      'GroupHasMembersError',
      'GroupStatus',
      'HandOffHeader',
      'HandOffWriter',
      'KafkaRecord',
      'LaneStateError',
      'LanesOptions',
      'LanesQuery',
      'LeaseLostError',
      'MemberlessOffsetCommitter',
      'OperatorParts',
      'ProduceRecord',
      'RedriveOptions',
      'ReplayFilter',
      'ResetPlan',
      'RunCommitterOptions',
      'applyReset',
      'completionGroupId',
      'deadLetterTopic',
      'ensureTopics',
      'laneIdOf',
      'planReset',
      'produceRecords',
      'readBlockedLanes',
      'readDeadLetters',
      'readHandOffHeaders',
      'readStatus',
      'redriveExpiredLeases',
      'releaseHeldLane',
      'renderStatus',
      'replayDeadLetters',
      'resolveOptions',
      'retryTopics',
      'runCommitter',
      'startDashboard',
    ]);
  });

  it('has at run time exactly the values of that list', async () => {
    const operator = await import('../../../src/operator');
    expect(Object.keys(operator).sort()).toEqual([
      'CompletionStore', 'GroupHasMembersError', 'HandOffHeader', 'HandOffWriter', 'LaneStateError', 'LeaseLostError', 'MemberlessOffsetCommitter',
      'applyReset', 'completionGroupId', 'deadLetterTopic', 'ensureTopics', 'laneIdOf', 'planReset', 'produceRecords', 'readBlockedLanes',
      'readDeadLetters', 'readHandOffHeaders', 'readStatus', 'redriveExpiredLeases', 'releaseHeldLane', 'renderStatus', 'replayDeadLetters',
      'resolveOptions', 'retryTopics', 'runCommitter', 'startDashboard',
    ]);
  });

  it('holds the operator and admin pieces the public entry leaves out', async () => {
    const operator = await import('../../../src/operator');
    expect(Object.keys(operator)).toEqual(expect.arrayContaining([
      'CompletionStore', 'readHandOffHeaders', 'HandOffHeader', 'runCommitter', 'resolveOptions',
      'replayDeadLetters', 'releaseHeldLane', 'redriveExpiredLeases', 'readStatus', 'ensureTopics', 'laneIdOf',
    ]));
  });
});

describe('the testing entry, kafka-lanes/testing', () => {
  it('exports testLanes, what it takes and shows, and the in-memory models: a new name is a deliberate change of this list', async () => {
    expect(exportedNames('testing/index.ts')).toEqual([
      'CompletionModel', 'CompletionModelStore', 'EffectsModel', 'LanesTest', 'OutputLog', 'TestDeadLetter', 'TestError', 'TestHeldLane',
      'TestLanesOptions', 'TestOrigin', 'TestOutput', 'TestRecord', 'TestRetry', 'TestRetryTime', 'TestRun', 'TestStep',
    ]);
    expect(Object.keys(await import('../../../src/testing')).sort()).toEqual(['CompletionModel', 'CompletionModelStore', 'EffectsModel', 'OutputLog', 'testLanes']);
  });
});
