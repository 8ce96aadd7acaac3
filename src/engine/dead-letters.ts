import type { PartitionRef } from '../ports/partition';
import { isDecodeFailure, topicPartitionKey, type Delivered, type DecodeFailure } from '../event';
import type { HandOffItem } from '../ports/handoff';
import { describeError } from '../lanes/outcome';
import type { PathParts, ScopeFigures, ScopeGiven, ScopeSettling } from './run-scope';

/** What writing copies at admission needs of a run scope. */
type WriteScope = Pick<ScopeGiven, 'write'> & Pick<ScopeSettling, 'redeliver' | 'markDone'>;
/** What dead-lettering at admission needs of a run scope. */
type DeadLetterScope = WriteScope & Pick<ScopeSettling, 'unreportable'> & Pick<ScopeFigures, 'count'>;
/** What it needs of the function's parts: the copy builder and the logger. */
type DeadLetterParts = Pick<PathParts, 'copies' | 'logger'>;

/** Writes hand-off copies, then marks their records done; reports them for redelivery if the write fails. */
export async function writeAndMarkDone(scope: WriteScope, ref: PartitionRef, items: readonly HandOffItem[], count: () => void): Promise<void> {
  if (items.length === 0) return;
  try {
    await scope.write(items);
  } catch (error) {
    scope.redeliver(ref, items.map((item) => item.record.offset), error);
    return;
  }
  count();
  for (const item of items) scope.markDone(ref, item.record.offset);
}

/**
 * Dead-letters records the event decoder could not read, with the reason, as one write. The copy's value
 * is the record's JSON as received. Those with a known offset are marked done once written.
 */
export async function deadLetterMalformed(scope: DeadLetterScope, parts: DeadLetterParts, ref: PartitionRef, failures: readonly DecodeFailure[]): Promise<void> {
  if (failures.length === 0) return;
  const items = failures.map((failure): HandOffItem => {
    parts.logger.error('malformed record: sent to the dead-letter topic', {
      partition: topicPartitionKey(failure.topic, failure.partition), offset: failure.offset, reason: failure.message,
    });
    return parts.copies.malformed(failure, 'malformed', failure.message);
  });
  try {
    await scope.write(items);
  } catch (error) {
    const placed = failures.flatMap((failure) => (failure.offset === undefined ? [] : [failure.offset]));
    scope.redeliver(ref, placed, error);
    if (placed.length < failures.length) {
      scope.unreportable(failures.length - placed.length);
      parts.logger.error('cannot dead-letter malformed records without an offset: the invocation will fail', {
        count: failures.length - placed.length, error: describeError(error),
      });
    }
    return;
  }
  scope.count('deadLettered', failures.length);
  for (const failure of failures) if (failure.offset !== undefined) scope.markDone(ref, failure.offset);
}

/**
 * Dead-letters every version of offsets delivered more than once with differing contents, as one write;
 * each offset is marked done only once all its versions are acknowledged (a crash before loses none).
 */
export async function deadLetterConflicts(
  scope: DeadLetterScope,
  parts: DeadLetterParts,
  ref: PartitionRef,
  conflicts: ReadonlyArray<{ offset: number; versions: readonly Delivered[] }>,
): Promise<void> {
  if (conflicts.length === 0) return;
  const items = conflicts.flatMap(({ offset, versions }) => {
    const message = `offset ${offset} of ${topicPartitionKey(ref.topic, ref.partition)} was delivered ${versions.length} times with differing contents: every version is dead-lettered`;
    parts.logger.error('records share an offset: all sent to the dead-letter topic', { partition: topicPartitionKey(ref.topic, ref.partition), offset, versions: versions.length });
    return versions.map((version) => (isDecodeFailure(version)
      ? parts.copies.malformed(version, 'duplicate-offset', `${message}; this one is malformed: ${version.message}`)
      : parts.copies.deadLetter({ record: version, origin: { topic: version.topic, partition: version.partition, offset: version.offset } }, 0, 'duplicate-offset', { name: 'DuplicateOffset', message })));
  });
  try {
    await scope.write(items);
  } catch (error) {
    scope.redeliver(ref, conflicts.map(({ offset }) => offset), error);
    return;
  }
  scope.count('deadLettered', items.length);
  for (const { offset } of conflicts) scope.markDone(ref, offset);
}
