/**
 * `kafka-lanes local up|status|down` as a user's project runs it: from a directory outside this repository, on ports
 * of its own (the shared stack on 9092/6379 is left alone), with its state in that directory's .kafka-lanes/.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Redis } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import { freePort } from '../../infra/local/demo/offline-process';

const ROOT = join(__dirname, '..', '..');
const TSX = join(ROOT, 'node_modules', '.bin', 'tsx');
const BIN = join(ROOT, 'src', 'cli', 'bin.ts');
// A broker of its own starts (a JVM) and stops: a minute, more on a loaded machine.
jest.setTimeout(600_000);

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function kafkaLanes(cwd: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<Run> {
  return new Promise((resolve) => {
    execFile(TSX, [BIN, ...args], { cwd, env, timeout: 180_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
    });
  });
}

function which(command: string): string {
  return execFileSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' }).trim();
}


describe('kafka-lanes local', () => {
  const project = mkdtempSync(join(tmpdir(), 'kafka-lanes-local-'));
  let ports: string[] = [];

  afterAll(async () => {
    // Whatever the test left running (a failed assertion before `down`).
    await kafkaLanes(project, ['local', 'down', ...ports]);
    rmSync(project, { recursive: true, force: true });
  });

  it('starts a broker and a Redis for a project on its ports, reports them, and stops only them', async () => {
    // Prepare
    const [kafkaPort, controllerPort, redisPort] = [await freePort(), await freePort(), await freePort()];
    ports = ['--kafka-port', String(kafkaPort), '--controller-port', String(controllerPort), '--redis-port', String(redisPort)];

    // Act
    const up = await kafkaLanes(project, ['local', 'up', ...ports]);

    // Assess
    expect(up).toMatchObject({ code: 0 });
    expect(up.stdout).toContain(`[local] kafka: Kafka 3.9.1 up on 127.0.0.1:${kafkaPort}`);
    expect(existsSync(join(project, '.kafka-lanes', 'kafka', 'data-3.9.1', 'meta.properties'))).toBe(true);
    const admin = new Kafka({ brokers: [`127.0.0.1:${kafkaPort}`], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    const cluster = await admin.describeCluster();
    await admin.disconnect();
    expect(cluster.brokers).toEqual([expect.objectContaining({ port: kafkaPort })]);
    const redis = new Redis({ port: redisPort, lazyConnect: true });
    await redis.connect();
    expect(await redis.ping()).toBe('PONG');
    redis.disconnect();

    const again = await kafkaLanes(project, ['local', 'up', ...ports]);
    expect(again).toMatchObject({ code: 0 });
    expect(again.stdout).toContain(`[local] kafka: already up on 127.0.0.1:${kafkaPort} (Kafka 3.9.1`);
    expect(again.stdout).toContain(`[local] redis: already up on 127.0.0.1:${redisPort}`);

    const status = await kafkaLanes(project, ['local', 'status', ...ports]);
    expect(status).toMatchObject({ code: 0 });
    expect(status.stdout).toMatch(new RegExp(`^kafka +up +127\\.0\\.0\\.1:${kafkaPort} .*Kafka 3\\.9\\.1, pid \\d+, this directory`, 'm'));
    expect(status.stdout).toMatch(new RegExp(`^redis +up +127\\.0\\.0\\.1:${redisPort} \\(pid \\d+, this directory\\)`, 'm'));
    // Without the ports, `status` reports the ones this directory's broker and Redis listen on.
    const bare = await kafkaLanes(project, ['local', 'status']);
    expect(bare.stdout).toMatch(new RegExp(`^kafka +up +127\\.0\\.0\\.1:${kafkaPort} \\(controller 127\\.0\\.0\\.1:${controllerPort}; Kafka 3\\.9\\.1, pid \\d+, this directory`, 'm'));
    expect(bare.stdout).toMatch(new RegExp(`^redis +up +127\\.0\\.0\\.1:${redisPort} \\(pid \\d+, this directory\\)`, 'm'));

    const down = await kafkaLanes(project, ['local', 'down', ...ports]);
    expect(down).toMatchObject({ code: 0 });
    expect(down.stdout).toMatch(/\[local\] kafka: stopped \(pid \d+\)/);
    expect(down.stdout).toContain(`[local] redis ${redisPort}: stopped`);

    const after = await kafkaLanes(project, ['local', 'status', ...ports]);
    expect(after.code).toBe(1);
    expect(after.stdout).toMatch(new RegExp(`^kafka +down +127\\.0\\.0\\.1:${kafkaPort}`, 'm'));
    expect(after.stdout).toMatch(new RegExp(`^redis +down +127\\.0\\.0\\.1:${redisPort}`, 'm'));
    // The storage stays for the next `up`; the shared stack was never touched.
    expect(existsSync(join(project, '.kafka-lanes', 'kafka', 'data-3.9.1', 'meta.properties'))).toBe(true);
    const shared = new Redis({ port: 6379, lazyConnect: true });
    await shared.connect();
    expect(await shared.ping()).toBe('PONG');
    shared.disconnect();
  });

  it('names the missing tool and how to install it when java is not on PATH', async () => {
    // Prepare: a PATH with node alone.
    const env = { ...process.env, PATH: dirname(process.execPath) };

    // Act
    const up = await kafkaLanes(project, ['local', 'up', '--services', 'kafka', '--kafka-port', String(await freePort()), '--controller-port', String(await freePort())], env);

    // Assess
    expect(up.code).toBe(1);
    expect(up.stderr).toContain('The local Kafka broker needs `java` on PATH, and it is not there. Install a Java 17 (or later) runtime');
  });

  it('names Maven when the jars are not fetched yet and mvn is not on PATH', async () => {
    // Prepare: a fresh project, and a PATH with node and java alone.
    const fresh = mkdtempSync(join(tmpdir(), 'kafka-lanes-local-'));
    const bin = join(fresh, 'bin');
    mkdirSync(bin);
    for (const tool of ['node', 'java']) symlinkSync(realpathSync(tool === 'node' ? process.execPath : which('java')), join(bin, tool));

    // Act
    const up = await kafkaLanes(fresh, ['local', 'up', '--services', 'kafka', '--kafka-port', String(await freePort()), '--controller-port', String(await freePort())], {
      ...process.env,
      PATH: bin,
    });

    // Assess
    rmSync(fresh, { recursive: true, force: true });
    expect(up.code).toBe(1);
    expect(up.stderr).toContain('Fetching the Kafka broker jars needs `mvn` on PATH, and it is not there. Install Maven');
  });
});
