/** The floor of bench:coldstart: a Lambda handler that loads nothing. */
export const handler = async (): Promise<{ batchItemFailures: never[] }> => ({ batchItemFailures: [] });
