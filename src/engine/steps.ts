/**
 * One record's durable steps and buffered outputs (`ctx.step`, `ctx.send`). Made only when a handler calls either:
 * a handler with neither pays nothing.
 */
import { LanesError, StepNameError, StepResultTooLargeError } from '../errors';
import type { LanesOptions, StepSerializer } from '../options/lanes-options';
import { outputIdPrefix } from './outputs';
import { OUTPUT_HEADER, type OutputRecord } from '../lanes/effects';
import type { EffectsPort, StepsRef, StoredSteps } from '../ports/effects';
import type { OutputMessage } from '../ports/handoff';

// Public, so they live with the other public errors: importing the entry loads no part of the engine.
export { StepNameError, StepResultTooLargeError } from '../errors';

/** A step's result could not be serialized or a stored one read back (not retried: the same code fails again). */
export class StepSerializationError extends LanesError {}

/** `ctx.send` was given something that is not an output record, or was called after the handler returned. */
export class OutputError extends LanesError {}

/** JSON, with `undefined` kept (an empty text): a step that returns nothing is still a completed step. */
export const JSON_STEP_SERIALIZER: StepSerializer = {
  serialize: (value) => (value === undefined ? '' : JSON.stringify(value)),
  deserialize: (text) => (text === '' ? undefined : JSON.parse(text)),
};

const NO_STEPS: ReadonlyMap<string, string> = new Map();

/** What a record's steps look at of its deadline: a step does not start once it expired. */
export interface StepDeadline {
  readonly expired: boolean;
  readonly reason: unknown;
}

/** Turns a step cache hit, a miss run and the outputs into what the engine needs after the handler. */
export class RecordEffects {
  readonly #port: EffectsPort;
  readonly #at: StepsRef;
  readonly #group: string;
  readonly #options: LanesOptions;
  readonly #ttlMs: number;
  readonly #deadline: StepDeadline;
  /** The results stored by earlier runs: read on the first step, none for a record that never ran before. */
  #stored: ReadonlyMap<string, string> | Promise<ReadonlyMap<string, string>> | undefined;
  /** Names of the steps of this run, in call order. */
  readonly #names: string[] = [];
  /** The last step started: steps of one record run one after another, in call order, even when started together. */
  #last: Promise<unknown> | undefined = undefined;
  #outputs: OutputMessage[] | undefined;
  /** The `lanes-output` value of this record's outputs up to their index (made at the first `ctx.send`). */
  #outputPrefix: string | undefined = undefined;
  #sealed = false;
  /** The encodings of this run's outputs to topics with a registry format (`outputFormats`); none rejects. */
  readonly #encodings: Array<Promise<void>> = [];
  #encodeError: unknown = undefined;
  /** Steps that ran their function in this run (not those returned from storage). */
  ran = 0;

  /** `fresh`: the record never ran before, so no result of it is stored (its steps read nothing). */
  constructor(port: EffectsPort, at: StepsRef, group: string, options: LanesOptions, ttlMs: number, deadline: StepDeadline, fresh = false) {
    this.#port = port;
    this.#at = at;
    this.#group = group;
    this.#options = options;
    this.#ttlMs = ttlMs;
    this.#deadline = deadline;
    this.#stored = fresh ? NO_STEPS : undefined;
  }

  /** Whether this record ran, stored or read steps (their results are deleted once it is terminal). */
  get usedSteps(): boolean {
    return this.#names.length > 0;
  }

  get steps(): StepsRef {
    return this.#at;
  }

  /** Where this record's step results live and the names of its steps: those of this run and those an earlier run stored. */
  get stored(): StoredSteps {
    const stored = this.#stored;
    if (stored === undefined || stored instanceof Promise || stored.size === 0) return { ref: this.#at.ref, offset: this.#at.offset, names: this.#names };
    const names = new Set(this.#names);
    for (const name of stored.keys()) names.add(name);
    return { ref: this.#at.ref, offset: this.#at.offset, names: [...names] };
  }

  step<R>(name: string, fn: () => R | Promise<R>): Promise<R> {
    if (typeof name !== 'string' || name === '') {
      return Promise.reject(new StepNameError(`Expected a step name to be a non-empty string, got \`${String(name)}\` (${typeof name})`));
    }
    if (typeof fn !== 'function') {
      return Promise.reject(new StepNameError(`Expected step \`${name}\` to be given a function, got ${typeof fn}`));
    }
    if (this.#names.includes(name)) {
      return Promise.reject(new StepNameError(
        `step \`${name}\` ran twice in one run of a record: step names must be unique within a run (add a suffix, e.g. \`${name}-2\`, for a step repeated in a loop)`,
      ));
    }
    this.#names.push(name);
    const last = this.#last;
    // The first step starts at once; a later one once the one before settled, whatever its outcome. (No named
    // closure: a bundle keeping names would name it on every call.)
    const run = last === undefined ? this.#run(name, fn) : last.then(() => this.#run(name, fn), () => this.#run(name, fn));
    this.#last = run;
    return run;
  }

  async #run<R>(name: string, fn: () => R | Promise<R>): Promise<R> {
    let stored = this.#stored;
    if (stored === undefined) stored = this.#stored = this.#port.loadSteps(this.#at);
    if (stored instanceof Promise) stored = this.#stored = await stored;
    const serializer = this.#options.steps.serializer ?? JSON_STEP_SERIALIZER;
    const hit = stored.get(name);
    if (hit !== undefined) return this.#read(serializer, name, hit) as R;
    if (this.#deadline.expired) throw this.#deadline.reason;
    this.ran += 1;
    const result = await fn();
    let text: string;
    try {
      text = serializer.serialize(result);
    } catch (error) {
      throw new StepSerializationError(`step \`${name}\`: its result could not be serialized: ${(error as Error)?.message ?? String(error)}`, { cause: error });
    }
    if (typeof text !== 'string') throw new StepSerializationError(`step \`${name}\`: the serializer returned ${typeof text}, not a string`);
    const { maxBytes } = this.#options.steps;
    // UTF-8 takes at most 3 bytes per UTF-16 unit: most results are measured without encoding them.
    const bytes = text.length * 3 <= maxBytes ? text.length : Buffer.byteLength(text, 'utf8');
    if (bytes > maxBytes) {
      throw new StepResultTooLargeError(
        `step \`${name}\` returned ${bytes} bytes serialized, above \`steps.maxBytes\` (${maxBytes}): its result could not be stored, so the step would run again; return something smaller (an id) or raise the limit`,
      );
    }
    const first = await this.#port.saveStep(this.#at, name, text, this.#ttlMs);
    // Read back even when just stored: a re-run returns the deserialized value, so the first run sees the same.
    return this.#read(serializer, name, first ?? text) as R;
  }

  #read(serializer: StepSerializer, name: string, text: string): unknown {
    try {
      return serializer.deserialize(text);
    } catch (error) {
      throw new StepSerializationError(`step \`${name}\`: its stored result could not be read back: ${(error as Error)?.message ?? String(error)}`, { cause: error });
    }
  }

  send(topic: string, record: OutputRecord): void {
    if (this.#sealed) throw new OutputError(`ctx.send(\`${topic}\`) after the handler returned: outputs are sent only once it succeeds, so send before returning`);
    if (typeof topic !== 'string' || topic === '') throw new OutputError(`Expected ctx.send's topic to be a non-empty string, got \`${String(topic)}\` (${typeof topic})`);
    if (typeof record !== 'object' || record === null || !('value' in record)) {
      throw new OutputError('Expected ctx.send\'s record to be an object `{ key?, value, headers?, partition? }`');
    }
    const outputs = (this.#outputs ??= []);
    const headers: Record<string, string | Buffer> = {};
    if (record.headers !== undefined) {
      for (const name in record.headers) {
        if (Object.hasOwn(record.headers, name) && !name.startsWith('lanes-')) headers[name] = record.headers[name]!;
      }
    }
    this.#outputPrefix ??= outputIdPrefix(this.#group, { topic: this.#at.ref.topic, partition: this.#at.ref.partition, offset: this.#at.offset });
    headers[OUTPUT_HEADER] = `${this.#outputPrefix}${outputs.length}`;
    const { value } = record;
    const format = value === null || Buffer.isBuffer(value) ? undefined : this.#options.outputFormats?.[topic];
    const index = outputs.push({
      topic,
      key: record.key ?? null,
      value: format !== undefined || value === null || typeof value === 'string' || Buffer.isBuffer(value) ? (value as string | Buffer | null) : JSON.stringify(value),
      headers,
      ...(record.partition === undefined ? {} : { partition: record.partition }),
    }) - 1;
    if (format !== undefined) {
      // Encoded while the handler goes on; a failure is kept for `seal`, so a run that fails first leaves none unhandled.
      this.#encodings.push(format.encode(value).then(
        (bytes) => void (outputs[index] = { ...outputs[index]!, value: bytes }),
        (error: unknown) => void (this.#encodeError ??= error),
      ));
    }
  }

  /**
   * The outputs to produce before the record is done (once those of registry-format topics are encoded); `ctx.send`
   * is refused from here on.
   *
   * @throws the first encoding's error (a value its schema refuses, a registry that refused or did not answer): the
   * record fails, and is retried.
   */
  /** Whether `seal` answers at once: no output waits for its encoding (`outputFormats`). */
  get sealsAtOnce(): boolean {
    return this.#encodings.length === 0;
  }

  seal(): readonly OutputMessage[] | Promise<readonly OutputMessage[]> {
    this.#sealed = true;
    if (this.#encodings.length === 0) return this.#outputs ?? [];
    return Promise.all(this.#encodings).then(() => {
      if (this.#encodeError !== undefined) throw this.#encodeError;
      return this.#outputs ?? [];
    });
  }
}
