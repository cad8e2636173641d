import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { EnvSchema, assertWorkersSupported, loadConfig } from "../../src/core/config.js";

/**
 * The deployment example in deploy/compose.yaml (docs/operations.md): it parses, runs
 * several replicas on Postgres and Redis behind a load balancer with probes, and every
 * variable it sets is one the service reads and accepts, with what several replicas need.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const compose = parse(readFileSync(path.join(ROOT, "deploy/compose.yaml"), "utf8")) as {
  name?: string;
  services: Record<string, { environment?: Record<string, string>; healthcheck?: { test: string[] }; deploy?: { replicas?: number }; depends_on?: Record<string, unknown>; command?: string[]; image?: string; read_only?: boolean }>;
};
const env = compose.services.medmmv!.environment!;

/** `${NAME:?message}` / `${NAME:-default}` as compose fills them in, with a sample value for the required ones. */
function filled(v: string): string {
  return v.replace(/\$\{(\w+):([?-])([^}]*)\}/g, (_m, name: string, kind: string, rest: string) => {
    if (kind === "-") return rest;
    if (name === "MEDMMV_API_KEYS") return "k".repeat(40);
    if (name === "OPENAI_BASE_URL") return "http://model:8000/v1";
    return "sample-value-0123456789abcdef-0123456789";
  });
}

describe("deploy/compose.yaml", () => {
  it("is a file Compose v1 reads too (no top-level `name:`), and runs the image read-only", () => {
    expect(Object.keys(compose).sort()).toEqual(["services", "volumes", "x-medmmv-env"]);
    expect(compose.services.medmmv!.read_only).toBe(true);
  });

  it("has nginx re-resolve the replicas (a `resolve` upstream server in a `zone`, on an nginx that has it in open source)", () => {
    const conf = readFileSync(path.join(ROOT, "deploy/nginx.conf"), "utf8").replace(/#.*$/gm, "");
    const upstream = /upstream\s+medmmv\s*\{([^}]*)\}/.exec(conf)?.[1] ?? "";
    expect(upstream).toMatch(/\bzone\s+\S+\s+\d+k;/);
    expect(upstream).toMatch(/\bserver\s+medmmv:8787\s+resolve;/);
    expect(conf).toMatch(/\bresolver\s+127\.0\.0\.11\b/);
    // `resolve` is open-source nginx from 1.27.3 (1.28 the first stable line with it)
    const [major, minor] = (/^nginx:(\d+)\.(\d+)/.exec(compose.services.lb!.image ?? "") ?? []).slice(1).map(Number);
    expect(major! > 1 || minor! >= 28).toBe(true);
  });

  it("has Postgres, Redis (no persistence), the replicas and a load balancer, with health checks", () => {
    expect(Object.keys(compose.services).sort()).toEqual(["lb", "medmmv", "postgres", "redis"]);
    expect(compose.services.medmmv!.deploy?.replicas).toBeGreaterThan(1);
    expect(compose.services.medmmv!.healthcheck?.test.join(" ")).toContain("/readyz");
    for (const dep of ["postgres", "redis"]) {
      expect(compose.services.medmmv!.depends_on?.[dep]).toEqual({ condition: "service_healthy" });
      expect(compose.services[dep]!.healthcheck).toBeDefined();
    }
    expect(compose.services.redis!.command).toEqual(["redis-server", "--save", "", "--appendonly", "no"]);
  });

  it("names only variables the service reads, and those that replicas need", () => {
    const known = new Set(Object.keys(EnvSchema.shape));
    for (const name of Object.keys(env)) expect(known.has(name), `${name} is a variable of src/core/config.ts`).toBe(true);
    for (const needed of ["DATABASE_URL", "REDIS_URL", "MEDMMV_API_KEYS", "MEDMMV_VIEW_LINK_SECRET", "MEDMMV_METRICS_TOKEN", "OPENAI_BASE_URL", "MEDMMV_MODEL", "HOST"]) expect(env[needed], needed).toBeDefined();
  });

  it("is a configuration the service accepts, for several processes", () => {
    const config = loadConfig(Object.fromEntries(Object.entries(env).map(([k, v]) => [k, filled(String(v))])));
    expect(config.engine.redisUrl).toBe("redis://redis:6379");
    expect(config.store.databaseUrl).toMatch(/^postgres:\/\/.+@postgres:5432\//);
    expect(config.metrics.token).not.toBeNull();
    expect(() => assertWorkersSupported(config, compose.services.medmmv!.deploy!.replicas!)).not.toThrow();
  });
});
