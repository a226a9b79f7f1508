/**
 * The host's door to the plugin SDK, which lives in its own package (packages/plugin-sdk,
 * `@reelay/plugin-sdk`) so that providers build and test plugins outside this tree. Core code
 * imports the SDK's types and helpers through here; plugins import `@reelay/plugin-sdk` itself.
 */
export * from "@reelay/plugin-sdk";
