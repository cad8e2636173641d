/**
 * The wings of src/ and the one-way arrows between them (docs/architecture.md, "Layout").
 * `npm run lint:deps` (run by .ci/run) fails on any import that breaks one of these rules.
 *
 *   core/contracts   the ground floor: schemas and types every other part speaks
 *   core/            what embeds without a server (intake, evidence graph, scoring, pathways,
 *                    model and search layers, agents, the LangGraph workflow)
 *   server/  eval/   two products on top of core; neither imports the other
 *   scripted/        scripted model and search servers, faults, demo scenarios
 *   cli/             the `medmmv` command: the only part that sees every wing
 *   client/          the generated HTTP client: stands alone
 */
const CORE_ABOVE_CONTRACTS = "^src/core/(?!contracts/)";

module.exports = {
  forbidden: [
    { name: "no-circular", severity: "error", comment: "A circle makes every file in it load-order dependent and untestable alone.", from: {}, to: { circular: true } },
    {
      name: "nothing-outside-test-imports-test",
      severity: "error",
      comment: "Product, bench, load, scripts and examples ship without test/.",
      from: { pathNot: "^test/" },
      to: { path: "^test/" },
    },
    {
      name: "contracts-are-the-ground-floor",
      severity: "error",
      comment: "The contracts import nothing of ours but each other.",
      from: { path: "^src/core/contracts/" },
      to: { path: "^src/", pathNot: "^src/core/contracts/" },
    },
    {
      name: "core-imports-only-core",
      severity: "error",
      comment: "core embeds without a server, an eval harness, the scripted servers or the CLI.",
      from: { path: "^src/core/" },
      to: { path: "^src/", pathNot: "^src/core/" },
    },
    {
      name: "core-floors-point-down",
      severity: "error",
      comment: "Inside core: the layers and helpers do not import the agents or the workflow; the agents do not import the workflow.",
      from: { path: "^src/core/(intake|evidence|scoring|pathways|llm|search|database|net|config|version)" },
      to: { path: "^src/core/(agents|workflow|conversation)/" },
    },
    {
      name: "agents-below-workflow",
      severity: "error",
      from: { path: "^src/core/agents/" },
      to: { path: "^src/core/(workflow|conversation)/" },
    },
    {
      name: "server-floors-point-down",
      severity: "error",
      comment: "Inside server: the store is the floor; service, cds-hooks, view and conversation stand on it; http on those; server.ts on top.",
      from: { path: "^src/server/store/" },
      to: { path: "^src/server/", pathNot: "^src/server/store/" },
    },
    {
      name: "server-http-on-top",
      severity: "error",
      from: { path: "^src/server/(service|engine|cds-hooks|view|conversation)/" },
      to: { path: "^src/server/(http/|server\\.ts|server-workers\\.ts)" },
    },
    {
      name: "server-entry-is-the-top",
      severity: "error",
      from: { path: "^src/server/http/" },
      to: { path: "^src/server/(server|server-workers)\\.ts$" },
    },
    {
      name: "server-does-not-import-eval",
      severity: "error",
      from: { path: "^src/server/" },
      to: { path: "^src/(eval|scripted|cli|client)/" },
    },
    {
      name: "eval-does-not-import-server",
      severity: "error",
      from: { path: "^src/eval/" },
      to: { path: "^src/(server|scripted|cli|client)/" },
    },
    {
      name: "scripted-stands-on-core",
      severity: "error",
      comment: "The scripted servers speak the wire formats; they may use the contracts and core helpers, nothing above.",
      from: { path: "^src/scripted/" },
      to: { path: "^src/(server|eval|cli|client)/" },
    },
    {
      name: "client-stands-alone",
      severity: "error",
      from: { path: "^src/client/" },
      to: { path: "^src/", pathNot: "^src/client/" },
    },
    {
      name: "nothing-imports-the-cli",
      severity: "error",
      comment: "cli is the top floor; bench, load and examples use the wings directly.",
      from: { path: "^(src|bench|load|scripts|examples)/", pathNot: "^src/cli/" },
      to: { path: "^src/cli/" },
    },
    {
      name: "view-client-is-browser-code",
      severity: "error",
      comment: "The audit view's browser bundle imports only its own folder (and types).",
      from: { path: "^src/server/view/client/" },
      to: { path: "^src/", pathNot: "^src/server/view/client/", dependencyTypesNot: ["type-only"] },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)node_modules/" },
  },
};
