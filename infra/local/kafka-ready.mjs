// Waits until the local broker answers a metadata request, using the kafkajs client the project
// already depends on (the same client the tests use). Exit 0 when ready, 1 on timeout.
// Usage: node infra/local/kafka-ready.mjs <broker host:port> <timeout seconds> [broker pid]
// With a pid, gives up at once (exit 2) when that process has exited: no point waiting 90 s.
/* global process, console, setTimeout */
import kafkajs from 'kafkajs';

const { Kafka, logLevel } = kafkajs;
const broker = process.argv[2] ?? '127.0.0.1:9092';
const timeoutMs = Number(process.argv[3] ?? 90) * 1000;
const brokerPid = process.argv[4] ? Number(process.argv[4]) : undefined;
const deadline = Date.now() + timeoutMs;
const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error?.code === 'EPERM';
  }
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const kafka = new Kafka({
  clientId: 'kafka-lanes-local-ready',
  brokers: [broker],
  logLevel: logLevel.NOTHING,
  connectionTimeout: 1000,
  requestTimeout: 3000,
  retry: { retries: 0 },
});

// A fresh broker creates __consumer_offsets on the first FindCoordinator request and answers
// "group coordinator not available" until it is loaded; kafkajs retries but logs each answer as an
// ERROR. Asking once here, with retries, keeps the first consumer group of a test run quiet.
async function warmUpGroupCoordinator() {
  const admin = new Kafka({ clientId: 'kafka-lanes-local-ready', brokers: [broker], logLevel: logLevel.NOTHING }).admin();
  try {
    await admin.connect();
    await admin.describeGroups(['kafka-lanes-local-warm-up']);
  } catch (error) {
    console.error(`[local] kafka: group coordinator warm-up failed (harmless): ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

let lastError = 'no attempt';
while (Date.now() < deadline) {
  if (brokerPid !== undefined && !alive(brokerPid)) {
    console.error(`[local] kafka: the broker process (pid ${brokerPid}) exited`);
    process.exit(2);
  }
  const admin = kafka.admin();
  try {
    await admin.connect();
    // A broker answers metadata before it has registered with the controller; ask for the
    // cluster and require a controller and at least one broker before calling it ready.
    const cluster = await admin.describeCluster();
    await admin.listTopics();
    if (cluster.brokers.length > 0 && cluster.controller !== null && cluster.controller !== undefined) {
      console.log(`[local] kafka answers on ${broker}: cluster ${cluster.clusterId}, ${cluster.brokers.length} broker(s)`);
      await admin.disconnect();
      await warmUpGroupCoordinator();
      process.exit(0);
    }
    lastError = 'no controller yet';
  } catch (error) {
    lastError = error instanceof Error ? error.message : String(error);
  }
  await admin.disconnect().catch(() => undefined);
  await sleep(500);
}
console.error(`[local] kafka did not answer on ${broker} within ${timeoutMs / 1000}s: ${lastError}`);
process.exit(1);
