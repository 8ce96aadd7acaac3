import { withoutLines } from '../../../src/serverless/offline/trigger';

describe('withoutLines: an idle serverless offline prints no committer run lines', () => {
  it("leaves out serverless-offline's line of each committer run, and nothing else, while the runs go on", async () => {
    // Prepare
    const written: string[] = [];
    const original = process.stderr.write;
    process.stderr.write = ((chunk: string) => (written.push(chunk), true)) as typeof process.stderr.write;

    // Act
    try {
      await withoutLines(['(λ: ordersCommitter) RequestId:'], async () => {
        process.stderr.write('(λ: ordersCommitter) RequestId: 1f2e  Duration: 12.31 ms  Billed Duration: 13 ms\n');
        process.stderr.write(Buffer.from('(λ: ordersCommitter) RequestId: 2a3b  Duration: 9.80 ms  Billed Duration: 10 ms\n'));
        process.stderr.write('(λ: orders) RequestId: 77aa  Duration: 40.00 ms  Billed Duration: 40 ms\n');
        process.stderr.write('{"level":"WARN","message":"frontier stalled"}\n(λ: ordersCommitter) RequestId: 3c4d  Duration: 8 ms\n');
      });
      process.stderr.write('(λ: ordersCommitter) RequestId: 9z  Duration: 1 ms  Billed Duration: 1 ms\n');
    } finally {
      process.stderr.write = original;
    }

    // Assess: the source function's line and the warning stay; after the run, the stream is as it was.
    expect(written).toEqual([
      '(λ: orders) RequestId: 77aa  Duration: 40.00 ms  Billed Duration: 40 ms\n',
      '{"level":"WARN","message":"frontier stalled"}\n',
      '(λ: ordersCommitter) RequestId: 9z  Duration: 1 ms  Billed Duration: 1 ms\n',
    ]);
  });
});
