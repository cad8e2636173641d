import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/core/config.js";
import { defaultRedisPrefix, deploymentId, storeLocation } from "../../src/core/deployment-identity.js";

/** The deployment a process belongs to is its store: the default Redis prefix and the job tag come from it. */
describe("deployment identity", () => {
  const pg = (url: string) => ({ databaseUrl: url, dataDir: "./data" });

  it("is the store's location without credentials or connection settings", () => {
    expect(storeLocation(pg("postgres://medmmv:s3cret@DB.example:5432/cases?sslmode=require"))).toBe("postgres://db.example:5432/cases");
    expect(storeLocation(pg("postgresql://other:pw@db.example/cases"))).toBe("postgres://db.example:5432/cases");
    expect(storeLocation(pg("host=/run/pg dbname=cases password=s3cret"))).not.toContain("s3cret");
    expect(storeLocation({ databaseUrl: null, dataDir: "/srv/medmmv/data" })).toBe("sqlite:/srv/medmmv/data");
  });

  it("is one id for every replica of a store (whoever logs in) and another for another store", () => {
    const a = deploymentId(pg("postgres://a:1@db.example:5432/cases"));
    expect(deploymentId(pg("postgres://b:2@db.example:5432/cases?application_name=x"))).toBe(a);
    expect(deploymentId(pg("postgres://a:1@db.example:5432/other"))).not.toBe(a);
    expect(deploymentId(pg("postgres://a:1@db2.example:5432/cases"))).not.toBe(a);
    expect(a).toMatch(/^[0-9a-f]{16}$/);
  });

  it("gives the default MEDMMV_REDIS_PREFIX; a configured one wins", () => {
    const derived = loadConfig({ MEDMMV_DATA_DIR: "/srv/a" }).engine;
    expect(derived.prefix).toBe(defaultRedisPrefix({ databaseUrl: null, dataDir: "/srv/a" }));
    expect(derived.prefix).toMatch(/^medmmv-[0-9a-f]{12}$/);
    expect(loadConfig({ MEDMMV_DATA_DIR: "/srv/b" }).engine.prefix).not.toBe(derived.prefix);
    const set = loadConfig({ MEDMMV_DATA_DIR: "/srv/a", MEDMMV_REDIS_PREFIX: "prod-eu" }).engine;
    expect(set.prefix).toBe("prod-eu");
    expect(set.deployment).toBe(derived.deployment);
  });
});
