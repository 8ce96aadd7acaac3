import { localConfig, type LocalFlags } from '../../../src/cli/commands/local';
import { KAFKA_DEFAULT_VERSION, listenerPorts, serverProperties } from '../../../src/cli/local/files';
import { newClusterId } from '../../../src/cli/local/stack';

const DEFAULTS: LocalFlags = {
  dir: '.kafka-lanes',
  kafkaVersion: KAFKA_DEFAULT_VERSION,
  kafkaPort: '9092',
  controllerPort: '9093',
  redisPort: '6379',
  clusterPorts: '7000,7001,7002',
};

describe('localConfig', () => {
  it("keeps the state in the project's .kafka-lanes/ and runs Kafka and Redis by default", () => {
    const config = localConfig(DEFAULTS, '/home/me/shop', {});

    expect(config).toMatchObject({ dir: '/home/me/shop/.kafka-lanes', kafkaDir: '/home/me/shop/.kafka-lanes/kafka', kafkaPort: 9092, controllerPort: 9093, redisPort: 6379 });
    expect([...config.services]).toEqual(['kafka', 'redis']);
    expect(config.heapOpts).toBe('-Xms256m -Xmx1G');
  });

  it('adds the Redis Cluster with --cluster; an explicit --services list is exactly what runs', () => {
    expect([...localConfig({ ...DEFAULTS, cluster: true }, '/p').services]).toEqual(['kafka', 'redis', 'redis-cluster']);
    expect([...localConfig({ ...DEFAULTS, cluster: true, services: 'kafka' }, '/p').services]).toEqual(['kafka']);
  });

  it('refuses a bad port, version or service, naming the flag and what was given', () => {
    expect(() => localConfig({ ...DEFAULTS, kafkaPort: '70000' }, '/p')).toThrow('Expected `--kafka-port` to be a port (1-65535), got `70000`');
    expect(() => localConfig({ ...DEFAULTS, controllerPort: '9092' }, '/p')).toThrow('Expected `--kafka-port` and `--controller-port` to differ, got 9092 for both');
    expect(() => localConfig({ ...DEFAULTS, kafkaVersion: 'latest' }, '/p')).toThrow(/Expected `--kafka-version` \(or KAFKA_VERSION\) to be a released Kafka version like 3\.9\.1, got `latest`/);
    expect(() => localConfig({ ...DEFAULTS, services: 'kafka,zookeeper' }, '/p')).toThrow('Expected `--services` (or LOCAL_SERVICES) to list kafka, redis, redis-cluster, got `zookeeper`');
    expect(() => localConfig({ ...DEFAULTS, clusterPorts: '7000,7001' }, '/p')).toThrow(/at least 3 ports/);
  });
});

describe('serverProperties', () => {
  it('listens on the ports asked for, and listenerPorts reads them back', () => {
    const text = serverProperties({ dataDir: '/p/.kafka-lanes/kafka/data-3.9.1', kafkaPort: 19092, controllerPort: 19093 });

    expect(text).toContain('listeners=PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093');
    expect(text).toContain('controller.quorum.voters=1@127.0.0.1:19093');
    expect(text).toContain('log.dirs=/p/.kafka-lanes/kafka/data-3.9.1');
    expect(listenerPorts(text)).toEqual({ kafkaPort: 19092, controllerPort: 19093 });
    expect(listenerPorts('process.roles=broker\n')).toBeUndefined();
  });
});

describe('newClusterId', () => {
  it("is 16 bytes in base64url, as Kafka's Uuid prints them, never starting with a dash", () => {
    for (let i = 0; i < 200; i++) {
      const id = newClusterId();
      expect(id).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
      expect(Buffer.from(id, 'base64url')).toHaveLength(16);
    }
  });
});
