/** The part of oidc-provider (npm, no types of its own) the SSO test's identity provider uses. */
declare module "oidc-provider" {
  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    callback(): (req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse) => void;
  }
}
