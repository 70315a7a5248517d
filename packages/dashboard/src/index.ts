// @pixhook/dashboard: the local webhook dashboard and inspector that `pixhook dashboard` runs
// (@pixhook/cli loads this package on demand), and the same from code.
export { type Dashboard, type DashboardOptions, DEFAULT_PORT, startDashboard } from './server.js';
