export { brokersId, kafkaClientConfig, kafkaConnectionConfig, saslConfig, type KafkaConnectionConfig, type KafkaConnectionDeps, type SignIamToken } from './kafka';
export {
  clearMskCache,
  mskBootstrapBrokers,
  mskListener,
  pickBootstrapBrokers,
  regionOfArn,
  type GetBootstrapBrokers,
  type MskListener,
} from './msk';
export { importKafkaJs, type KafkaJsModule } from './kafkajs';
export { connectRedis, connectStore, createRedis, importIoRedis, openNode, openStore, redisConnectionConfig, redisUsesTls, type IoRedisModule, type RedisConnectionConfig } from './redis';
export {
  awsSecretReader,
  clearSecretCache,
  saslCredentials,
  withKafkaSecret,
  withRedisSecret,
  type ReadSecret,
  type SecretClientConfig,
  type SecretDeps,
} from './secrets';
export { createKafkaClient, type KafkaAdmin, type KafkaClient, type KafkaConsumer, type KafkaProducer, type ProducerFactory } from './kafka-client';
