/** The parts of a package.json the build and packaging checks read. */
export interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  exports?: string | Record<string, unknown>;
  bin?: string | Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

/** A public workspace package, as found under `packages/`. */
export interface WorkspacePackage {
  name: string;
  dir: string;
  manifest: Manifest;
}

/** Every `packages/<dir>/package.json` that is not private, sorted by name. */
export function discoverPackages(root: string): WorkspacePackage[];

/** Why a package's dist cannot be trusted (missing, or older than its sources or build config), or undefined. */
export function staleBuild(pkg: Pick<WorkspacePackage, 'name' | 'dir'>): string | undefined;

/** The pnpm to run: `[command, leading arguments]`. */
export function pnpmCommand(): [string, string[]];

/** What a program run by `run` did: its exit code (`null` when it could not start or was killed) and output. */
export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a program without a shell, its output collected; never rejects. */
export function run(
  command: string,
  args: string[],
  options?: { cwd?: string; timeoutMs?: number; shell?: boolean },
): Promise<RunResult>;
