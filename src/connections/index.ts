export { brokersId, kafkaConnectionConfig, saslConfig, type KafkaConnectionConfig, type KafkaConnectionDeps, type SignIamToken } from './kafka';
export {
  clearMskCache,
  mskBootstrapBrokers,
  mskListener,
  pickBootstrapBrokers,
  regionOfArn,
  type GetBootstrapBrokers,
  type MskListener,
} from './msk';
export { loadKafkaJs, type KafkaJsModule } from './kafkajs';
export { createRedis, redisConnectionConfig, redisUsesTls, type RedisConnectionConfig } from './redis';
