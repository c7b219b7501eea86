// Loaded by run.sh with `node --import`: bare imports the repo cannot resolve
// (tests/client has no node_modules) are resolved again from the dependency
// install in $SNODO_CLIENT_DEPS (a directory holding node_modules/), so the
// install can live in the build cache instead of the source tree.
import { registerHooks } from 'node:module';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';

const deps = process.env.SNODO_CLIENT_DEPS;
if (deps) {
  const parentURL = pathToFileURL(join(deps, 'package.json')).href;
  registerHooks({
    resolve(specifier, context, nextResolve) {
      try {
        return nextResolve(specifier, context);
      } catch (error) {
        if (error?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
        return nextResolve(specifier, { ...context, parentURL });
      }
    },
  });
}
