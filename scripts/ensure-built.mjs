// Placeholder until the build-once check lands: builds every package (as `pnpm build`).
import { execSync } from 'node:child_process';
execSync('npx -y pnpm@10.34.9 build', { stdio: 'inherit' });
