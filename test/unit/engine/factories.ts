import type { Task } from '../../../src/engine/scheduler';

export { kafkaRecord } from '../../support/records';

/** A scheduler task; `id` names it in assertions (`orders-0@3`). */
export interface TestTask extends Task {
  readonly id: string;
}

/** A task of lane `lane` (`undefined`: independent) at `offset` of `partitionKey`. */
export function task(partitionKey: string, offset: number, lane?: string): TestTask {
  return { partitionKey, lane, offset, id: `${partitionKey}@${offset}` };
}

/** The tasks of one partition at offsets 0, 1, 2, ...: `lanes[i]` is the lane of offset i. */
export function partitionTasks(partitionKey: string, lanes: readonly (string | undefined)[]): TestTask[] {
  return lanes.map((lane, offset) => task(partitionKey, offset, lane));
}
