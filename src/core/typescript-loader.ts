let registering: Promise<void> | undefined;

/**
 * Makes `import()` load TypeScript, so users need no build step for the environments and agents they
 * write. Running from source (tsx, vitest) it already does; the built CLI registers tsx's loader for the
 * process, once. Not tsx's `tsImport`: its loader is namespaced, which gives the module a private copy of
 * every module it imports, terrarium's own included, and the engine then fails to recognise the states
 * that copy makes as immutable (a private brand each), converting the whole state again at every step.
 */
export function typeScriptLoader(): Promise<void> {
  if (!import.meta.url.endsWith(".js")) return Promise.resolve();
  registering ??= import("tsx/esm/api").then(({ register }) => {
    register();
  });
  return registering;
}
