/**
 * `npm start` itself, with a short demo load (as CI runs it): it must end with its checked summary and exit 0.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { deadLetterTopic, retryTopic } from '../../src/options';
import { DEMO_TIERS } from '../../infra/local/start';
import { deleteTopics, uniqueName } from './support/stack';

const ROOT = join(__dirname, '..', '..');

describe('npm start', () => {
  const topic = uniqueName('kl-demo-orders');
  const group = uniqueName('kl-demo-grp');

  afterAll(async () => {
    await deleteTopics([topic, ...DEMO_TIERS.map((tier) => retryTopic(group, tier)), deadLetterTopic(group)]);
  });

  it('runs the example under serverless offline and ends with a checked summary', async () => {
    // Act
    const { code, output } = await new Promise<{ code: number; output: string }>((resolve) => {
      execFile(
        'npm',
        ['start', '--', '--records', '300', '--partitions', '3', '--poison-every', '50'],
        { cwd: ROOT, env: { ...process.env, DEMO_TOPIC: topic, DEMO_GROUP: group }, maxBuffer: 64 * 1024 * 1024 },
        (error, stdout, stderr) => resolve({ code: error === null ? 0 : Number(error.code ?? 1), output: `${stdout}${stderr}` }),
      );
    });

    // Assess
    expect({ code, tail: output.slice(-3_000) }).toMatchObject({ code: 0 });
    expect(output).toMatch(/produced\s+300/);
    expect(output).toMatch(/dead-lettered\s+6/);
    expect(output).toContain('ok  every order processed or dead-lettered');
    expect(output).toContain('ok  per-customer order intact');
    expect(output).toContain('ok  completion group at the end offsets');
    expect(output).toContain('run checked: ok');
    // Its topics are new: the leader elections after their creation are waited out, not printed as errors.
    expect(output.split('\n').filter((line) => /"level":"ERROR"|\bERROR\b/.test(line))).toEqual([]);
  });
});
