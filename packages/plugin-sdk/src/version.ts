/**
 * `PLUGIN_API_VERSION` is the contract between a plugin and the host; the host refuses a plugin
 * built for another one at boot. 2 is the contract of @reelay/plugin-sdk 1.x (branded errors,
 * per-call context, checked results); 1 was the SDK that lived inside reelay's tree, whose errors
 * the host could not recognise from another bundle. `SDK_VERSION` is this package's version.
 */
export const PLUGIN_API_VERSION = 2 as const;
export const SDK_VERSION = "1.5.0";
