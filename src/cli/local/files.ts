/**
 * The files the local stack writes before it starts a broker: the Maven project that fetches the Apache Kafka
 * broker jars, the broker's configuration and its logging configuration. They are text in the code, not files of
 * the package, so `kafka-lanes local up` runs the same from a checkout (TypeScript) and from the installed package
 * (one bundled ES module) without looking for files beside itself.
 */

/** The Kafka version `local up` runs unless `--kafka-version` (or `KAFKA_VERSION`) names another. */
export const KAFKA_DEFAULT_VERSION = '3.9.1';

/** Versions of the logging binding the Kafka 3.9 distribution ships (libs/slf4j-reload4j, libs/reload4j). */
const SLF4J_VERSION = '1.7.36';
const RELOAD4J_VERSION = '1.2.25';
const DEPENDENCY_PLUGIN_VERSION = '3.6.1';

/**
 * Not a build: a Maven project whose only job is `mvn dependency:copy-dependencies -Dkafka.version=<v>
 * -Dlibs.dir=<dir>`, which copies every runtime jar of the broker into `<dir>`. The broker then runs straight from
 * that classpath (`kafka.Kafka`, KRaft combined mode), without a Kafka distribution tarball.
 */
export const KAFKA_JARS_POM = `<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by kafka-lanes local up: fetches the Apache Kafka broker jars (mvn dependency:copy-dependencies). -->
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 https://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.kafka-lanes.local</groupId>
  <artifactId>local-kafka-broker</artifactId>
  <version>0</version>
  <packaging>pom</packaging>
  <properties>
    <kafka.version>${KAFKA_DEFAULT_VERSION}</kafka.version>
    <libs.dir>\${project.basedir}/libs</libs.dir>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <!-- The broker (kafka.Kafka) and kafka.tools.StorageTool; the rest of the runtime classpath comes transitively. -->
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>\${kafka.version}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka-storage</artifactId>
      <version>\${kafka.version}</version>
    </dependency>
    <!-- Logs to a file through log4j 1.x (reload4j), configured by the log4j.properties written beside the broker. -->
    <dependency>
      <groupId>org.slf4j</groupId>
      <artifactId>slf4j-reload4j</artifactId>
      <version>${SLF4J_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>ch.qos.reload4j</groupId>
      <artifactId>reload4j</artifactId>
      <version>${RELOAD4J_VERSION}</version>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-dependency-plugin</artifactId>
        <version>${DEPENDENCY_PLUGIN_VERSION}</version>
        <configuration>
          <outputDirectory>\${libs.dir}</outputDirectory>
          <includeScope>runtime</includeScope>
        </configuration>
      </plugin>
    </plugins>
  </build>
</project>
`;

/** Where and how one local broker listens and stores. */
export interface BrokerLayout {
  /** Absolute directory of the broker's log (data) and metadata log. */
  readonly dataDir: string;
  readonly kafkaPort: number;
  readonly controllerPort: number;
}

/**
 * A single-node Kafka for local development: KRaft combined mode (one process is broker and controller),
 * plaintext, loopback only. Pure.
 *
 * @example
 * writeFileSync(config, serverProperties({ dataDir: '/p/.kafka-lanes/kafka/data-3.9.1', kafkaPort: 9092, controllerPort: 9093 }));
 */
export function serverProperties(layout: BrokerLayout): string {
  return `# Written by kafka-lanes local up (rewritten on every start).
process.roles=broker,controller
node.id=1
# Static single-voter quorum; storage is formatted without --standalone to match.
controller.quorum.voters=1@127.0.0.1:${layout.controllerPort}

listeners=PLAINTEXT://127.0.0.1:${layout.kafkaPort},CONTROLLER://127.0.0.1:${layout.controllerPort}
advertised.listeners=PLAINTEXT://127.0.0.1:${layout.kafkaPort}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT

log.dirs=${layout.dataDir}
metadata.log.dir=${layout.dataDir}

# Auto-create stays on so a stray produce to a missing topic does not hang a local run.
auto.create.topics.enable=true
delete.topic.enable=true
num.partitions=1
default.replication.factor=1
# One broker: every internal topic has one replica, and acks=all means "this broker wrote it".
min.insync.replicas=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
# Fewer internal partitions than the default 50: faster first group join and broker restart.
offsets.topic.num.partitions=10
transaction.state.log.num.partitions=10

# Consumer groups: rebalance at once instead of waiting 3 s for more members (tests join one by one).
group.initial.rebalance.delay.ms=0

# A laptop: few threads.
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
background.threads=4

# Keep local disk bounded: local runs and tests leave many small topics behind.
log.retention.hours=24
log.segment.bytes=67108864
log.retention.check.interval.ms=300000
`;
}

/** The ports a broker's configuration (as `serverProperties` writes it) listens on; undefined when not found. Pure. */
export function listenerPorts(properties: string): { kafkaPort: number; controllerPort: number } | undefined {
  const listeners = /^listeners=(.*)$/m.exec(properties)?.[1];
  const kafkaPort = Number(/PLAINTEXT:\/\/[^:,]+:(\d+)/.exec(listeners ?? '')?.[1]);
  const controllerPort = Number(/CONTROLLER:\/\/[^:,]+:(\d+)/.exec(listeners ?? '')?.[1]);
  return Number.isInteger(kafkaPort) && kafkaPort > 0 && Number.isInteger(controllerPort) && controllerPort > 0 ? { kafkaPort, controllerPort } : undefined;
}

/**
 * Logging of the broker and of the Kafka tools (log4j 1.x API, through reload4j): one rolling file,
 * `${kafka.logs.dir}/${kafka.log.file}` (server.log for the broker, tools.log for the storage tool).
 */
export const LOG4J_PROPERTIES = `# Written by kafka-lanes local up.
log4j.rootLogger=INFO, file

log4j.appender.file=org.apache.log4j.RollingFileAppender
log4j.appender.file.File=\${kafka.logs.dir}/\${kafka.log.file}
log4j.appender.file.MaxFileSize=50MB
log4j.appender.file.MaxBackupIndex=3
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n

# The stock configuration keeps these quiet too: per-request and per-state-change lines drown the rest.
log4j.logger.kafka.request.logger=WARN
log4j.logger.kafka.network.RequestChannel$=WARN
log4j.logger.state.change.logger=WARN
log4j.logger.kafka.log.LogCleaner=WARN
log4j.logger.org.apache.kafka.storage.internals.log.LogCleaner=WARN
log4j.logger.org.apache.zookeeper=WARN
`;
