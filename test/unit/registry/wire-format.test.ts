import { confluentFrame, FrameError, glueFrame, readFrame, readGlueMessageIndex, readMessageIndexes, writeMessageIndexes } from '../../../src/registry/wire-format';

describe('readFrame: the registry frame before a payload', () => {
  it('reads Confluent\'s magic byte 0 and the 4-byte big-endian schema id', () => {
    const frame = readFrame(Buffer.from([0, 0, 0, 1, 2, 0xaa, 0xbb]));
    expect(frame).toEqual({ schema: { registry: 'confluent', id: 258 }, zlib: false, payload: Buffer.from([0xaa, 0xbb]) });
  });

  it('reads Glue\'s header version 3, its compression byte and the schema version id as a UUID', () => {
    const id = '0f8e2a6c-1b3d-4e5f-8a9b-0c1d2e3f4a5b';
    expect(readFrame(glueFrame(id, Buffer.from('xyz'), true))).toEqual({ schema: { registry: 'glue', versionId: id }, zlib: true, payload: Buffer.from('xyz') });
    expect(readFrame(glueFrame(id, Buffer.from('xyz'), false)).zlib).toBe(false);
  });

  it.each([
    [Buffer.from('{"id":1}'), /expected magic byte 0 \(Confluent wire format\) or header version 3 \(Glue\), got 0x7b \('\{'\).*JSON/],
    [Buffer.from([7, 1, 2]), /got 0x07$/],
    [Buffer.alloc(0), /got 0 bytes/],
    [Buffer.from([0, 0, 1]), /expected a 5-byte Confluent header .* got 3 bytes/],
    [Buffer.from([3, 0, 1]), /expected an 18-byte Glue header .* got 3 bytes/],
    [Buffer.concat([Buffer.from([3, 9]), Buffer.alloc(16)]), /expected Glue compression byte 0 \(none\) or 5 \(zlib\), got 9/],
  ])('refuses bytes without a frame, naming what was expected and what came (%#)', (bytes, message) => {
    expect(() => readFrame(bytes)).toThrow(FrameError);
    expect(() => readFrame(bytes)).toThrow(message);
  });

  it('writes what it reads', () => {
    expect(readFrame(confluentFrame(2_000_000_000, Buffer.from('p')))).toEqual({ schema: { registry: 'confluent', id: 2_000_000_000 }, zlib: false, payload: Buffer.from('p') });
  });
});

describe('Protobuf message indexes', () => {
  it('reads the single byte 0 as the first message of the file', () => {
    expect(readMessageIndexes(Buffer.from([0, 8, 1]))).toEqual({ indexes: [0], payload: Buffer.from([8, 1]) });
  });

  it.each([[[1]], [[0, 2]], [[3, 0, 70]], [[200]]])('writes and reads the zigzag varints of %j', (indexes) => {
    const written = writeMessageIndexes(indexes);
    expect(readMessageIndexes(Buffer.concat([written, Buffer.from([0x55])]))).toEqual({ indexes, payload: Buffer.from([0x55]) });
  });

  it('refuses indexes cut short or implausible', () => {
    expect(() => readMessageIndexes(Buffer.alloc(0))).toThrow(/got the end of the bytes/);
    expect(() => readMessageIndexes(Buffer.from([4, 2]))).toThrow(/got the end of the bytes/);
    expect(() => readMessageIndexes(Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0x01]))).toThrow(/longer than 5 bytes/);
    expect(() => readMessageIndexes(Buffer.from([1]))).toThrow(/count of 1 to 64, got -1/);
  });
});

describe("Glue's Protobuf message index", () => {
  it('reads one unsigned varint before the message', () => {
    expect(readGlueMessageIndex(Buffer.from([0, 0x0a, 0x01]))).toEqual({ index: 0, payload: Buffer.from([0x0a, 0x01]) });
    expect(readGlueMessageIndex(Buffer.from([0x96, 0x01, 0x0a]))).toEqual({ index: 150, payload: Buffer.from([0x0a]) });
  });

  it('refuses a varint cut short or past 32 bits', () => {
    expect(() => readGlueMessageIndex(Buffer.alloc(0))).toThrow(FrameError);
    expect(() => readGlueMessageIndex(Buffer.from([0x80]))).toThrow(/got the end of the bytes/);
    expect(() => readGlueMessageIndex(Buffer.from([0xff, 0xff, 0xff, 0xff, 0x7f]))).toThrow(/more than 32 bits/);
  });
});
