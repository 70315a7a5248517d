// @pixhook/dashboard: the local webhook dashboard and inspector that `pixhook dashboard` runs
// (@pixhook/cli loads this package on demand), and the same from code; with an inbox and queues,
// views of production's archived deliveries and dead letters.
export type { DeadLetterSource } from './production.js';
export { type Dashboard, type DashboardOptions, DEFAULT_PORT, startDashboard } from './server.js';
