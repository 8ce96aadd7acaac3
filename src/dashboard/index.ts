export { startDashboard, type Dashboard, type DashboardOptions } from './server';
export { DeadLetterLog, deadLetterRow, followDeadLetters, previewOf, type DeadLetterFilter, type DeadLetterRow } from './dead-letters';
export { History, sampleOf, type HistorySample, type HistorySeries } from './history';
export { BadRequest, parseDeadLetterQuery, parseLanesQuery, parseReleaseRequest, parseReplayRequest } from './query';
export { allowedHost, csrfRefusal, hasAccess, randomToken, redactSecrets } from './security';
